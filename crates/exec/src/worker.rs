//! The workers: each takes units one at a time from a shared counter,
//! reads them in its own transaction at the shared snapshot, and hands
//! the rows on (decoded into Arrow batches, encoded by the format) to the
//! table's output. Also what happens when a worker's connection is lost
//! (its unit is redone on a new attachment, when that is safe) and the
//! coordinator's watch over the main attachment.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fbunload_client::{Attachment, ConnectOptions, Transaction, TransactionMode};
use fbunload_decode::{OutputColumn, RowDecoder};
use fbunload_plan::{Plan, Unit};
use fbunload_sink::BatchEncoder;

use crate::output::{self, TableOutput, UnitSink};
use crate::{ExecError, Progress, TableSummary, UnloadRequest};

/// State shared by the workers of one run.
pub(crate) struct Run<'r> {
    pub req: &'r UnloadRequest,
    pub plan: &'r Plan,
    pub outputs: &'r [TableOutput],
    pub next_unit: AtomicUsize,
    pub failed: AtomicBool,
    pub first_error: Mutex<Option<ExecError>>,
    pub rows: Vec<AtomicU64>,
    pub progress: &'r dyn Progress,
    pub retries: AtomicU64,
    /// Whether workers get a writer thread (there are spare cores).
    pub pipelined: bool,
    /// The "oldest interesting transaction" all first transactions agreed
    /// on (see [`crate::snapshot::join_snapshot`]).
    pub oldest_interesting: AtomicU64,
}

pub(crate) fn main_attachment_lost(e: fbunload_client::ClientError) -> ExecError {
    ExecError::Server(format!(
        "the main attachment was lost ({e}); the shared snapshot is gone, so the run \
         stopped. Tables finished before are complete; unfinished ones were removed. \
         Run fbunload again"
    ))
}

/// How often the coordinator checks that the main attachment, which keeps
/// the shared snapshot alive, is still there.
const MAIN_ATTACHMENT_CHECK: Duration = Duration::from_millis(250);

impl Run<'_> {
    /// Records the first failure and tells every worker to stop.
    pub fn guard(&self, body: impl FnOnce() -> Result<(), ExecError>) {
        if let Err(err) = body() {
            self.fail(err);
        }
    }

    pub fn fail(&self, err: ExecError) {
        let mut first = self.first_error.lock().unwrap();
        if first.is_none() {
            *first = Some(err);
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Whether to stop: another worker failed, or the user interrupted.
    fn should_stop(&self) -> bool {
        if self.req.cancel.load(Ordering::SeqCst) && !self.failed.load(Ordering::SeqCst) {
            self.fail(ExecError::Interrupted);
        }
        self.failed.load(Ordering::SeqCst)
    }

    /// Runs on the coordinator while workers work: if the main attachment
    /// goes, so does the guarantee that a worker can rejoin the snapshot,
    /// and the run stops rather than go on half-protected.
    pub fn watch_main_attachment(&self, main: &Attachment, running: &AtomicUsize) {
        while running.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(MAIN_ATTACHMENT_CHECK);
            if self.should_stop() {
                continue;
            }
            if let Err(e) = main.ping() {
                self.fail(main_attachment_lost(e));
            }
        }
    }

    pub fn row_counts(&self) -> Vec<u64> {
        self.rows
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect()
    }

    fn worker_options(&self) -> ConnectOptions {
        crate::connect_options(self.req, true)
    }

    /// Opens every worker's attachment, in parallel (remote attaches take
    /// a round trip or more each).
    pub fn attach_workers(&self, count: usize) -> Result<Vec<Attachment>, ExecError> {
        let connect = self.worker_options();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| Attachment::connect(&self.req.client, &connect)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap().map_err(|e| {
                        ExecError::attach(&connect.database, connect.user.as_deref(), e)
                    })
                })
                .collect()
        })
    }

    /// One worker, in its transaction at the shared snapshot. A lost
    /// connection (a killed attachment, a network break) costs a new
    /// attachment and the redo of the unit in hand — if that is safe.
    pub fn worker(&self, first: Transaction, snapshot: u64) -> Result<(), ExecError> {
        let mut resume = None;
        let mut result = self.work(&first, &mut resume);
        drop(first);
        let mut retries = 0;
        while let Err(err) = &result {
            if resume.is_none() || retries >= self.req.max_retries || self.should_stop() {
                break;
            }
            retries += 1;
            self.retries.fetch_add(1, Ordering::Relaxed);
            self.progress
                .warning(&format!("{err}; redoing the unit on a new attachment"));
            result = self.rejoin(snapshot, &mut resume);
        }
        result
    }

    /// A new attachment and transaction at the snapshot, for a redo. It
    /// sees the same data only if its oldest interesting transaction is
    /// not newer than the first transactions' (see [`crate::snapshot::join_snapshot`]).
    fn rejoin(&self, snapshot: u64, resume: &mut Option<Unit>) -> Result<(), ExecError> {
        let connect = self.worker_options();
        let attachment = Attachment::connect(&self.req.client, &connect)
            .map_err(|e| ExecError::attach(&connect.database, connect.user.as_deref(), e))?;
        let tr = attachment
            .start_transaction(TransactionMode::ReadOnlyAtSnapshot(snapshot))
            .map_err(|e| {
                ExecError::Server(format!("a worker cannot rejoin snapshot {snapshot}: {e}"))
            })?;
        if tr.oldest_interesting().map_err(ExecError::Client)?
            > self.oldest_interesting.load(Ordering::SeqCst)
        {
            return Err(ExecError::Server(format!(
                "a worker's connection was lost, and its unit cannot be redone at snapshot \
                 {snapshot}: transactions that were running when the snapshot was taken have \
                 committed since, and Firebird would show some of their changes to a transaction \
                 joining the snapshot now. The run stopped and unfinished tables were removed; \
                 run fbunload again"
            )));
        }
        self.work(&tr, resume)
    }

    /// Takes units until there are none left or the run has failed.
    ///
    /// `resume` is a unit to do first; when a unit fails because the
    /// connection was lost, it is put back there for a retry.
    ///
    /// Fetching and decoding happen on this thread (they must: the rows
    /// live in its statement's buffer). Encoding and writing happen here
    /// too when every core already runs a worker; when cores are spare, a
    /// writer thread per worker does them, so fetching never waits for
    /// formatting or the disk. Measured on 2 cores: one worker with a
    /// writer thread is ~12% faster, two workers with writer threads ~15%
    /// slower (four busy threads on two cores).
    pub fn work(&self, tr: &Transaction, resume: &mut Option<Unit>) -> Result<(), ExecError> {
        if !self.pipelined {
            let mut writer = WriterState::default();
            let mut deliver = |message| match self.write(&mut writer, message) {
                Ok(()) => true,
                Err(err) => {
                    self.fail(err);
                    false
                }
            };
            return self.take_units(tr, resume, &mut deliver);
        }
        std::thread::scope(|scope| {
            let (to_writer, from_fetcher) = std::sync::mpsc::sync_channel(WRITER_QUEUE);
            scope.spawn(move || {
                self.guard(|| {
                    let mut writer = WriterState::default();
                    from_fetcher
                        .into_iter()
                        .try_for_each(|m| self.write(&mut writer, m))
                })
            });
            // A closed channel means the writer failed; its error is the
            // one recorded, so this side just stops.
            let mut deliver = |message| to_writer.send(message).is_ok();
            self.take_units(tr, resume, &mut deliver)
        })
    }

    fn take_units(
        &self,
        tr: &Transaction,
        resume: &mut Option<Unit>,
        deliver: &mut dyn FnMut(ToWriter) -> bool,
    ) -> Result<(), ExecError> {
        while !self.should_stop() {
            let unit = match resume.take() {
                Some(unit) => unit,
                None => match self
                    .plan
                    .units
                    .get(self.next_unit.fetch_add(1, Ordering::SeqCst))
                {
                    Some(unit) => *unit,
                    None => break,
                },
            };
            if let Err(err) = self.read_unit(tr, &unit, deliver) {
                // The writer puts the unit's file back as it was.
                deliver(ToWriter::Abort);
                if err.is_connection_lost() {
                    *resume = Some(unit);
                }
                return Err(err);
            }
        }
        Ok(())
    }

    /// Fetches one unit and delivers it, batch by batch, to the writer.
    fn read_unit(
        &self,
        tr: &Transaction,
        unit: &Unit,
        deliver: &mut dyn FnMut(ToWriter) -> bool,
    ) -> Result<(), ExecError> {
        let table = &self.plan.tables[unit.table];
        let name = table.name.as_str();
        let mut stmt = tr
            .prepare(&table.unit_sql(unit))
            .map_err(|e| ExecError::from_client(name, e))?;
        if self.req.fetch_only {
            return self.fetch_and_drop(&mut stmt, unit);
        }
        if stmt.columns().len() != table.columns.len() {
            return Err(ExecError::table(
                name,
                "the table's columns changed while planning",
            ));
        }
        let columns = stmt
            .columns()
            .iter()
            .zip(&table.columns)
            .zip(&table.declared_types)
            .map(|((desc, column), declared)| {
                OutputColumn::new(column, desc, Some(declared), &self.req.types)
                    .map_err(|m| ExecError::table(name, format!("column {column}: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut decoder = RowDecoder::new(columns, self.req.batch);
        if !deliver(ToWriter::Begin {
            unit: *unit,
            schema: decoder.schema(),
        }) {
            return Ok(());
        }
        stmt.execute()
            .map_err(|e| ExecError::from_client(name, e))?;
        loop {
            let more = stmt.fetch().map_err(|e| ExecError::from_client(name, e))?;
            if more {
                decoder
                    .append_row(&stmt.row())
                    .map_err(|e| ExecError::from_decode(name, e))?;
            }
            if decoder.is_full() || (!more && !decoder.is_empty()) {
                let batch = decoder
                    .take_batch()
                    .map_err(|e| ExecError::from_decode(name, e))?;
                if !deliver(ToWriter::Batch(batch)) || self.should_stop() {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
        }
        deliver(ToWriter::End);
        Ok(())
    }

    /// Encodes and writes what a fetcher delivers, unit by unit.
    fn write(&self, state: &mut WriterState, message: ToWriter) -> Result<(), ExecError> {
        match message {
            ToWriter::Begin { unit, schema } => {
                let output = &self.outputs[unit.table];
                let sink = output
                    .begin_unit(unit.seq, &self.req.format.header(&schema))
                    .map_err(|source| self.output_error(unit.table, source))?;
                state.current = Some((unit, self.req.format.encoder(schema), sink));
                state.unit_rows = 0;
            }
            ToWriter::Batch(batch) => {
                let Some((unit, encoder, sink)) = state.current.as_mut() else {
                    return Ok(());
                };
                let name = &self.plan.tables[unit.table].name;
                state.encoded.clear();
                encoder
                    .encode(&batch, &mut state.encoded)
                    .map_err(|e| ExecError::from_sink(name, e))?;
                sink.write_all(&state.encoded).map_err(|source| {
                    let path = self.outputs[unit.table].final_path.clone();
                    self.output_error(unit.table, output::OutputError { path, source })
                })?;
                let rows = batch.num_rows() as u64;
                state.unit_rows += rows;
                self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
                self.progress.rows_written(rows, state.encoded.len() as u64);
            }
            ToWriter::Abort => {
                if let Some((unit, _, sink)) = state.current.take() {
                    // The unit will be read again; its rows count then.
                    self.rows[unit.table].fetch_sub(state.unit_rows, Ordering::Relaxed);
                    self.outputs[unit.table]
                        .abandon_unit(sink)
                        .map_err(|source| self.output_error(unit.table, source))?;
                }
            }
            ToWriter::End => {
                let Some((unit, mut encoder, mut sink)) = state.current.take() else {
                    return Ok(());
                };
                let name = &self.plan.tables[unit.table].name;
                state.encoded.clear();
                encoder
                    .finish(&mut state.encoded)
                    .map_err(|e| ExecError::from_sink(name, e))?;
                sink.write_all(&state.encoded).map_err(|source| {
                    let path = self.outputs[unit.table].final_path.clone();
                    self.output_error(unit.table, output::OutputError { path, source })
                })?;
                let output = &self.outputs[unit.table];
                if output
                    .finish_unit(unit.seq, sink)
                    .map_err(|source| self.output_error(unit.table, source))?
                {
                    self.progress.table_finished(&TableSummary {
                        name: self.plan.tables[unit.table].name.clone(),
                        path: output.final_path.clone(),
                        rows: self.rows[unit.table].load(Ordering::Relaxed),
                        bytes: output.size(),
                        units: self.plan.tables[unit.table].unit_count,
                    });
                }
            }
        }
        Ok(())
    }

    fn output_error(&self, table: usize, source: output::OutputError) -> ExecError {
        ExecError::Output {
            table: self.plan.tables[table].name.clone(),
            source,
        }
    }
}

/// Batches a fetcher may have queued for its writer: enough to smooth out
/// a slow write, few enough to keep memory bounded (each is at most
/// `BatchLimits` big).
const WRITER_QUEUE: usize = 4;

/// A writer's unit in progress and its reused encoding buffer.
#[derive(Default)]
struct WriterState {
    current: Option<(Unit, Box<dyn BatchEncoder>, UnitSink)>,
    /// Rows of `current` written so far.
    unit_rows: u64,
    encoded: Vec<u8>,
}

/// What a worker's fetcher tells its writer.
enum ToWriter {
    Begin {
        unit: Unit,
        schema: SchemaRef,
    },
    Batch(RecordBatch),
    End,
    /// The unit failed: undo what was written of it.
    Abort,
}

impl Run<'_> {
    fn fetch_and_drop(
        &self,
        stmt: &mut fbunload_client::Statement<'_>,
        unit: &Unit,
    ) -> Result<(), ExecError> {
        let name = &self.plan.tables[unit.table].name;
        stmt.execute()
            .map_err(|e| ExecError::from_client(name, e))?;
        let mut rows = 0u64;
        while stmt.fetch().map_err(|e| ExecError::from_client(name, e))? {
            rows += 1;
            if rows.is_multiple_of(self.req.batch.rows as u64) {
                self.progress.rows_written(self.req.batch.rows as u64, 0);
            }
        }
        self.progress
            .rows_written(rows % self.req.batch.rows as u64, 0);
        self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
        Ok(())
    }
}
