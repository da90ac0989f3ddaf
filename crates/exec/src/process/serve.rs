//! The reader process's side: attach, join the snapshot the run names,
//! and read the units it is given, slot by slot, sending each batch back
//! as Arrow IPC.
//!
//! The main thread reads the run's messages and starts every slot's
//! transaction itself (so they start together, as the run's threads do);
//! each slot reads on a thread of its own. A slot sends at most
//! [`Setup::credit`] batches the run has not taken yet, so a run whose
//! writer waits holds a bounded number of them. The end of the input (the
//! run closed the pipe, or died) ends the process at once, wherever its
//! slots are.

use std::io::{self, BufReader, BufWriter};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

use fbunload_client::{Attachment, Client, ConnectOptions, WireCrypt, WireOptions};
use fbunload_decode::{BatchLimits, TextDecoder, TypeOptions};

use super::wire::{self, Failure, ReadUnit, Setup, Tag, WHOLE};
use crate::firebird::{start_at_snapshot, Database, FirebirdReader, ReadContext};
use crate::session::Reader;
use crate::ExecError;

type Output = Arc<Mutex<BufWriter<io::Stdout>>>;

fn send(out: &Output, tag: Tag, slot: u32, payload: &[u8]) -> io::Result<()> {
    wire::write_frame(&mut *out.lock().unwrap(), tag, slot, payload)
}

fn send_failure(out: &Output, slot: u32, failure: &Failure) -> io::Result<()> {
    send(out, Tag::Failed, slot, &wire::to_json(failure))
}

/// What a slot's thread is told.
enum SlotCommand {
    /// Its transaction at the run's snapshot (replacing an earlier one).
    Reader(FirebirdReader),
    Read(ReadUnit),
}

/// Serves one run on standard input and output; returns the process's
/// exit status. A failure is sent to the run and said on standard error
/// too (for one started by hand), but when the run is gone: it stopped
/// (a signal, an error) and says why itself, so nothing of it ("Broken
/// pipe") reaches the terminal.
pub fn serve_reader() -> i32 {
    let out: Output = Arc::new(Mutex::new(BufWriter::with_capacity(1 << 16, io::stdout())));
    let mut input = BufReader::with_capacity(1 << 16, io::stdin());
    match serve(&mut input, &out) {
        Ok(()) => 0,
        // Started by hand: nobody reads the protocol.
        Err(e @ ExecError::Usage(_)) => {
            eprintln!("fbunload: {e}");
            1
        }
        // Its output closed: the run is gone.
        Err(ExecError::Interrupted) => 1,
        Err(e) => {
            let failure = Failure {
                lost: false,
                table: String::new(),
                text: e.to_string(),
            };
            match send_failure(&out, WHOLE, &failure) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                _ => eprintln!("fbunload reader process: {}", failure.text),
            }
            1
        }
    }
}

fn serve(input: &mut impl io::Read, out: &Output) -> Result<(), ExecError> {
    let protocol = |e: io::Error| match e.kind() {
        // What it writes has nobody to read it: the run is gone.
        io::ErrorKind::BrokenPipe => ExecError::Interrupted,
        _ => ExecError::Server(e.to_string()),
    };
    let frame = wire::read_frame(input).map_err(protocol)?;
    let Some(frame) = frame.filter(|f| f.tag == Tag::Setup) else {
        return Err(ExecError::Usage(
            "this is fbunload's reader process, started by a run; it is not run by hand".into(),
        ));
    };
    // The version first: another build's setup may not parse.
    #[derive(serde::Deserialize)]
    struct Version {
        protocol: String,
    }
    let version: Version = wire::from_json(&frame.payload).map_err(protocol)?;
    if version.protocol != wire::PROTOCOL {
        return Err(ExecError::Server(format!(
            "the reader process is another build of fbunload ({}) than the run ({})",
            wire::PROTOCOL,
            version.protocol
        )));
    }
    let setup: Setup = wire::from_json(&frame.payload).map_err(protocol)?;
    let mut schemas = Vec::with_capacity(setup.plan.tables.len());
    for _ in 0..setup.plan.tables.len() {
        match wire::read_frame(input).map_err(protocol)? {
            Some(f) if f.tag == Tag::Schema => schemas.push(
                wire::schema_from(&f.payload)
                    .map_err(|e| protocol(wire::corrupt(&e.to_string())))?,
            ),
            _ => return Err(protocol(wire::corrupt("a schema was expected"))),
        }
    }
    let client = Client::load(setup.client_library.as_deref()).map_err(ExecError::Client)?;
    // Signals are the run's: this process is in a group of its own and
    // ends when the run closes its input.
    client.leave_signals_to_the_application();
    let crypt = match setup.wire_crypt.as_deref() {
        Some("Disabled") => Some(WireCrypt::Disabled),
        Some("Enabled") => Some(WireCrypt::Enabled),
        Some("Required") => Some(WireCrypt::Required),
        _ => None,
    };
    let db = Database {
        client,
        connect: ConnectOptions {
            database: setup.database.clone(),
            user: setup.user.clone(),
            password: setup.password.clone(),
            role: setup.role.clone(),
            charset: String::new(),
            no_garbage_collect: true,
            wire: WireOptions {
                compression: setup.wire_compression,
                crypt,
            },
        },
    };
    let read_group = fbunload_client::new_read_group();
    // The run watches this process's calls from its side (its stall
    // timeout ends this process): nothing here gives an attach up.
    let never = std::sync::atomic::AtomicBool::new(false);
    let attachments: Vec<Attachment> = db.attach_readers(setup.slots, read_group, &never)?;
    let context = Arc::new(ReadContext {
        plan: Arc::new(setup.plan),
        schemas: Arc::new(schemas),
        types: TypeOptions {
            none_text: TextDecoder::for_charset(&setup.none_text).ok_or_else(|| {
                protocol(wire::corrupt(&format!(
                    "unknown character set {:?}",
                    setup.none_text
                )))
            })?,
            decimal256: setup.decimal256,
        },
        batch: BatchLimits {
            rows: setup.batch_rows,
            bytes: setup.batch_bytes,
        },
        read_group,
    });
    let mut slots = Vec::with_capacity(attachments.len());
    for slot in 0..attachments.len() {
        let (commands, received) = channel();
        let (credits, credit) = channel();
        for _ in 0..setup.credit.max(1) {
            let _ = credits.send(());
        }
        let (out, context) = (out.clone(), context.clone());
        std::thread::spawn(move || serve_slot(slot as u32, received, credit, &out, &context));
        slots.push((commands, credits));
    }
    send(out, Tag::Attached, WHOLE, &[]).map_err(protocol)?;
    loop {
        let Some(frame) = wire::read_frame(input).map_err(protocol)? else {
            // The run closed the pipe (done, stopped or gone): leave now,
            // whatever a slot is waiting for.
            std::process::exit(0);
        };
        let slot = slots.get(frame.slot as usize);
        match (frame.tag, slot) {
            (Tag::Join, _) => {
                let number = wire::payload_u64(&frame.payload).map_err(protocol)?;
                let joined = attachments
                    .iter()
                    .map(|att| {
                        let tr = start_at_snapshot(att, number)?;
                        let oldest = tr.oldest_interesting().map_err(ExecError::Client)?;
                        Ok((tr, oldest))
                    })
                    .collect::<Result<Vec<_>, ExecError>>()?;
                let oldest: Vec<u64> = joined.iter().map(|(_, oldest)| *oldest).collect();
                for ((tr, _), (commands, _)) in joined.into_iter().zip(&slots) {
                    let reader = FirebirdReader::new(Arc::new(tr), context.clone());
                    let _ = commands.send(SlotCommand::Reader(reader));
                }
                send(out, Tag::Joined, WHOLE, &wire::to_json(&oldest)).map_err(protocol)?;
            }
            (Tag::Read, Some((commands, _))) => {
                let read: ReadUnit = wire::from_json(&frame.payload).map_err(protocol)?;
                let _ = commands.send(SlotCommand::Read(read));
            }
            (Tag::Ack, Some((_, credits))) => {
                let _ = credits.send(());
            }
            _ => return Err(protocol(wire::corrupt("an unexpected message"))),
        }
    }
}

/// One slot: reads the units it is given with its transaction.
fn serve_slot(
    slot: u32,
    commands: Receiver<SlotCommand>,
    credit: Receiver<()>,
    out: &Output,
    context: &ReadContext,
) {
    let mut reader = None;
    for command in commands {
        let read = match command {
            SlotCommand::Reader(r) => {
                reader = Some(r);
                continue;
            }
            SlotCommand::Read(read) => read,
        };
        let table = &context.plan.tables[read.unit.table];
        let Some(reader) = reader.as_mut() else {
            let _ = send_failure(
                out,
                slot,
                &Failure {
                    lost: false,
                    table: table.name.clone(),
                    text: "a reader process was asked to read before joining the snapshot".into(),
                },
            );
            continue;
        };
        let mut failed_send = None;
        let result = reader.read(&read.unit, read.fetch_only, &mut |batch| {
            // Waits until the run has taken enough of the slot's batches.
            if credit.recv().is_err() {
                return false;
            }
            let sent = wire::batch_bytes(&batch)
                .map_err(|e| io::Error::other(e.to_string()))
                .and_then(|bytes| send(out, Tag::Batch, slot, &bytes));
            match sent {
                Ok(()) => true,
                Err(e) => {
                    failed_send = Some(e);
                    false
                }
            }
        });
        if failed_send.is_some() {
            // The run is gone; the end of the input ends the process.
            return;
        }
        match result {
            Ok(rows) => {
                let _ = send(out, Tag::Done, slot, &wire::u64_payload(rows));
            }
            Err(ExecError::ConnectionLost { table, message }) => {
                let _ = send_failure(
                    out,
                    slot,
                    &Failure {
                        lost: true,
                        table,
                        text: message,
                    },
                );
            }
            Err(e) => {
                let _ = send_failure(
                    out,
                    slot,
                    &Failure {
                        lost: false,
                        table: table.name.clone(),
                        text: e.to_string(),
                    },
                );
            }
        }
    }
}
