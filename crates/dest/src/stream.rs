//! Record batches handed to an application as they are read, in order,
//! in bounded memory.
//!
//! The run goes on in threads of its own while the application takes
//! batches from a [`StreamReceiver`], in the plan's unit order (every
//! table's units in DB_KEY order). A unit's batches are held until the unit
//! is complete (a unit redone after a lost connection must not be seen
//! twice) and then queued. Memory is bounded by back-pressure rather than
//! by spilling: a unit that runs ahead of its turn waits while the units
//! held ahead of it fill the budget, and the queue to the application is
//! short. The unit whose turn it is never waits for room, so the run can
//! always move on: the dispatcher hands units out in order, so the unit in
//! turn is always being read by some worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use arrow_array::RecordBatch;
use fbunload_exec::{Destination, ExecError, RunInfo, UnitWriter, Written};
use fbunload_plan::Unit;

use crate::order::InOrder;

/// Batches queued for the application beyond those held by units.
const QUEUE_BATCHES: usize = 4;

/// How often a waiting unit looks whether the run is stopping.
const WAIT_TICK: Duration = Duration::from_millis(50);

/// A batch of table `table` (an index into the plan's tables).
#[derive(Debug, Clone)]
pub struct StreamedBatch {
    pub table: usize,
    pub batch: RecordBatch,
}

/// The destination side: give it to the run.
pub struct BatchStream {
    budget: usize,
    state: Mutex<State>,
    room: Condvar,
    stopped: Arc<AtomicBool>,
}

/// The application's side: the batches in order; it ends when the run
/// does (whose result says whether every batch came). Dropping it stops
/// the run.
pub struct StreamReceiver {
    items: Receiver<StreamedBatch>,
    stopped: Arc<AtomicBool>,
}

struct Held {
    table: usize,
    batches: Vec<RecordBatch>,
    bytes: usize,
}

struct State {
    order: InOrder<Held>,
    /// A unit's position in the plan's unit order, by (table, seq).
    position: HashMap<(usize, usize), usize>,
    /// Position of each table's last unit.
    last: Vec<usize>,
    /// Bytes held by units that are complete or being read.
    used: usize,
    queue: Option<SyncSender<StreamedBatch>>,
}

impl BatchStream {
    /// A stream whose units may hold `memory_budget` bytes while they wait.
    pub fn new(memory_budget: usize) -> (BatchStream, StreamReceiver) {
        let (sender, items) = sync_channel(QUEUE_BATCHES);
        let stopped = Arc::new(AtomicBool::new(false));
        let stream = BatchStream {
            budget: memory_budget,
            state: Mutex::new(State {
                order: InOrder::new(),
                position: HashMap::new(),
                last: Vec::new(),
                used: 0,
                queue: Some(sender),
            }),
            room: Condvar::new(),
            stopped: stopped.clone(),
        };
        (stream, StreamReceiver { items, stopped })
    }

    /// The run is over: the receiver ends once it has taken what is
    /// queued.
    pub fn close(&self) {
        self.state.lock().unwrap().queue.take();
    }

    /// Room for `bytes` more for the unit at `position`.
    fn reserve(&self, position: usize, bytes: usize) -> Result<(), ExecError> {
        let mut state = self.state.lock().unwrap();
        loop {
            if self.stopped.load(Ordering::SeqCst) {
                return Err(ExecError::Interrupted);
            }
            let in_turn = state.order.next() == position;
            if in_turn || state.used == 0 || state.used + bytes <= self.budget {
                state.used += bytes;
                return Ok(());
            }
            state = self.room.wait_timeout(state, WAIT_TICK).unwrap().0;
        }
    }

    fn release(&self, bytes: usize) {
        self.state.lock().unwrap().used -= bytes;
        self.room.notify_all();
    }
}

impl Destination for BatchStream {
    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        let mut state = self.state.lock().unwrap();
        state.last = vec![0; run.plan.tables.len()];
        for (position, unit) in run.plan.units.iter().enumerate() {
            state.position.insert((unit.table, unit.seq), position);
            state.last[unit.table] = position;
        }
        Ok(())
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        let position = self.state.lock().unwrap().position[&(unit.table, unit.seq)];
        Ok(Box::new(StreamUnit {
            stream: self,
            position,
            held: Held {
                table: unit.table,
                batches: Vec::new(),
                bytes: 0,
            },
        }))
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        let state = self.state.lock().unwrap();
        Ok(vec![Written::default(); state.last.len()])
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.room.notify_all();
    }
}

struct StreamUnit<'s> {
    stream: &'s BatchStream,
    position: usize,
    held: Held,
}

impl UnitWriter for StreamUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        fbunload_format::check_decimal_precision(&batch)
            .map_err(|e| ExecError::Usage(e.to_string()))?;
        let bytes = batch.get_array_memory_size();
        self.stream.reserve(self.position, bytes)?;
        self.held.bytes += bytes;
        self.held.batches.push(batch);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        let stream = self.stream;
        let table = self.held.table;
        let mut state = stream.state.lock().unwrap();
        let State {
            order, used, queue, ..
        } = &mut *state;
        let sent = order.arrive(self.position, Some(self.held), &mut |held: Held| {
            *used -= held.bytes;
            for batch in held.batches {
                let queue = queue.as_ref().ok_or(ExecError::Interrupted)?;
                queue
                    .send(StreamedBatch {
                        table: held.table,
                        batch,
                    })
                    .map_err(|_| ExecError::Interrupted)?;
            }
            Ok(())
        });
        let table_done = state.order.next() > state.last[table];
        drop(state);
        stream.room.notify_all();
        sent.map(|()| table_done)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        self.stream.release(self.held.bytes);
        Ok(())
    }
}

impl Iterator for StreamReceiver {
    type Item = StreamedBatch;

    fn next(&mut self) -> Option<Self::Item> {
        self.items.recv().ok()
    }
}

impl StreamReceiver {
    /// The next batch, waiting at most `timeout`: `Err(true)` when none
    /// came in time, `Err(false)` when the stream has ended.
    pub fn next_within(&mut self, timeout: Duration) -> Result<StreamedBatch, bool> {
        use std::sync::mpsc::RecvTimeoutError;
        self.items.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => true,
            RecvTimeoutError::Disconnected => false,
        })
    }
}

impl Drop for StreamReceiver {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array};
    use fbunload_plan::Plan;

    fn batch(v: i32) -> RecordBatch {
        RecordBatch::try_from_iter([("N", Arc::new(Int32Array::from(vec![v])) as ArrayRef)])
            .unwrap()
    }

    fn unit(table: usize, seq: usize) -> Unit {
        Unit {
            table,
            seq,
            first_slot: 0,
            end_slot: None,
        }
    }

    #[test]
    fn batches_come_out_in_unit_order_and_a_redone_unit_once() {
        let plan = Plan {
            tables: Vec::new(),
            units: vec![unit(0, 0), unit(0, 1), unit(1, 0)],
            unit_pages: 1,
            database_guid: None,
            database_file_id: None,
            table_formats: Default::default(),
            row_places: None,
        };
        let (stream, receiver) = BatchStream::new(1 << 20);
        let mut position = HashMap::new();
        let mut last = vec![0; 2];
        for (i, u) in plan.units.iter().enumerate() {
            position.insert((u.table, u.seq), i);
            last[u.table] = i;
        }
        {
            let mut state = stream.state.lock().unwrap();
            state.position = position;
            state.last = last;
        }
        let mut late = stream.begin_unit(&plan.units[2]).unwrap();
        late.write(batch(3)).unwrap();
        assert!(!late.finish().unwrap(), "held until units 0 and 1 are out");
        let mut second = stream.begin_unit(&plan.units[1]).unwrap();
        second.write(batch(2)).unwrap();
        assert!(!second.finish().unwrap());
        let mut failed = stream.begin_unit(&plan.units[0]).unwrap();
        failed.write(batch(99)).unwrap();
        failed.abort().unwrap();
        let mut first = stream.begin_unit(&plan.units[0]).unwrap();
        first.write(batch(1)).unwrap();
        // Sending blocks on the short queue: read on another thread.
        let reader = std::thread::spawn(move || {
            receiver
                .map(|item| {
                    let values = item.batch.column(0).as_any().downcast_ref::<Int32Array>();
                    (item.table, values.unwrap().value(0))
                })
                .collect::<Vec<_>>()
        });
        assert!(first.finish().unwrap());
        stream.close();
        assert_eq!(reader.join().unwrap(), [(0, 1), (0, 2), (1, 3)]);
        assert_eq!(stream.state.lock().unwrap().used, 0);
    }

    #[test]
    fn a_unit_ahead_of_its_turn_waits_for_room_until_stopped() {
        let (stream, _receiver) = BatchStream::new(1);
        {
            let mut state = stream.state.lock().unwrap();
            state.position.insert((0, 0), 0);
            state.position.insert((0, 1), 1);
            state.last = vec![1];
        }
        let mut ahead = stream.begin_unit(&unit(0, 1)).unwrap();
        ahead.write(batch(2)).unwrap(); // nothing held yet: it may
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| ahead.write(batch(3)));
            std::thread::sleep(Duration::from_millis(150));
            assert!(!waiting.is_finished(), "over budget and not in turn");
            // The unit in turn never waits.
            let mut in_turn = stream.begin_unit(&unit(0, 0)).unwrap();
            in_turn.write(batch(1)).unwrap();
            stream.stop();
            assert!(matches!(
                waiting.join().unwrap(),
                Err(ExecError::Interrupted)
            ));
        });
    }
}
