//! Partitioned reads: ADBC's `ExecutePartitions` and `ReadPartition`.
//!
//! The ADBC form of what `fbunload.dask` does. `ExecutePartitions` holds
//! a snapshot (the facade's `hold_snapshot`) and cuts the table into
//! shares of its DB_KEY units; each partition is plain JSON bytes: the
//! snapshot's ticket (numbers, no password), the table and the unit's
//! page range. `ReadPartition`, on any connection to the same database in
//! any process, opens an attachment that joins that snapshot
//! (`join_snapshot`) and reads that range: the partitions together are
//! the table at the one snapshot, whatever is committed meanwhile.
//!
//! The snapshot lives as long as the statement that executed (until it
//! executes again or is released); a partition read after that fails
//! with "snapshot N is closed", never with other data.
//!
//! Partition bytes come from outside (a task queue, a file), so they are
//! checked before anything attaches: every field present, of its type,
//! nothing else, and within what a partition can hold (a ticket's numbers
//! those of a snapshot, slots below what a table can have). In particular
//! a partition always names a snapshot: there is no form that reads the
//! current state. Partitions are not signed: one edited to name another
//! table reads that table's pages at the same snapshot.

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use adbc_core::error::{Error, Result, Status};
use adbc_core::PartitionedResult;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use fbunload::{HeldSnapshot, SnapshotTicket, Unit};
use serde::{Deserialize, Serialize};

use crate::{from_run, Read, Settings};

/// What every partition says it is, so other bytes are refused plainly.
/// `/2`: the ticket is always there (in `/1` it could be null).
const FORMAT: &str = "fbunload-adbc-partition/2";

/// Firebird's transaction (and so commit and snapshot) numbers have 48
/// bits.
const MAX_TRANSACTION: u64 = (1 << 48) - 1;

/// A data-page slot is `pointer page * slots per pointer page + slot`
/// ([`fbunload::Plan`]): pointer pages are numbered in 32 bits, and one
/// lists fewer than 2^16 data pages.
const MAX_SLOT: u64 = 1 << 48;

/// The longest table name: 63 characters of up to 4 bytes (Firebird 4).
const MAX_NAME_BYTES: usize = 252;

/// One partition: where, at which snapshot, and which pages of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    format: String,
    pub table: String,
    /// `(number, holder_transaction, oldest_active)`.
    pub ticket: (u64, u64, u64),
    /// Its position among the table's partitions.
    pub seq: usize,
    pub first_slot: u64,
    /// `null` for "to the table's end"; required all the same.
    #[serde(deserialize_with = "Option::deserialize")]
    pub end_slot: Option<u64>,
}

impl Partition {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a partition is plain numbers and text")
    }

    /// The partition `bytes` hold, or an error that says what is wrong
    /// with them (module docs).
    pub fn decode(bytes: &[u8]) -> Result<Partition> {
        let refused = |why: String| {
            Error::with_message_and_status(
                format!(
                    "not a partition of the fbunload driver (ExecutePartitions makes them): \
                     {why}"
                ),
                Status::InvalidArguments,
            )
        };
        let partition =
            serde_json::from_slice::<Partition>(bytes).map_err(|e| refused(e.to_string()))?;
        partition.check().map_err(refused)?;
        Ok(partition)
    }

    /// Whether the fields hold what a partition can (module docs).
    fn check(&self) -> std::result::Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("its format is {:?}, not {FORMAT:?}", self.format));
        }
        let name = &self.table;
        if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
            return Err(format!("{name:?} is not a table name"));
        }
        let (number, holder, oldest_active) = self.ticket;
        if number == 0
            || holder == 0
            || [number, holder, oldest_active]
                .iter()
                .any(|n| *n > MAX_TRANSACTION)
            || oldest_active > holder
        {
            return Err(format!(
                "its ticket {:?} is not a snapshot's (a snapshot number, the holding \
                 transaction, the oldest transaction active, at most {MAX_TRANSACTION})",
                self.ticket
            ));
        }
        let slots_in_order = match self.end_slot {
            Some(end) => self.first_slot < end && end <= MAX_SLOT,
            None => self.first_slot <= MAX_SLOT,
        };
        if !slots_in_order {
            return Err(format!(
                "its pages {}..{} are not a range of a table's",
                self.first_slot,
                self.end_slot.map_or("end".into(), |e| e.to_string())
            ));
        }
        Ok(())
    }

    fn ticket(&self) -> SnapshotTicket {
        let (number, holder_transaction, oldest_active) = self.ticket;
        SnapshotTicket {
            number,
            holder_transaction,
            oldest_active,
        }
    }

    /// Joins the partition's snapshot on a new attachment and reads its
    /// pages on a thread of its own, batch by batch as they are taken.
    pub fn read(&self, settings: &Settings) -> Result<Box<dyn RecordBatchReader + Send>> {
        let unload = settings.unload()?;
        let mut reader = unload
            .join_snapshot(Some(&self.ticket()), &self.table)
            .map_err(from_run)?;
        let schema = reader.schema();
        let unit = Unit {
            table: 0,
            seq: self.seq,
            first_slot: self.first_slot,
            end_slot: self.end_slot,
        };
        // Two batches read ahead at most; a consumer that stops early
        // stops the read.
        let (sender, receiver) = sync_channel(2);
        let worker = std::thread::spawn(move || {
            let read = reader.read(&unit, &mut |batch| sender.send(Ok(batch)).is_ok());
            if let Err(e) = read {
                let message = from_run(e).message;
                let _ = sender.send(Err(ArrowError::ExternalError(message.into())));
            }
        });
        Ok(Box::new(PartitionReader {
            schema,
            receiver: Some(receiver),
            worker: Some(worker),
        }))
    }
}

/// Holds a snapshot with table `read` planned in it and cuts the table
/// into at most `count` partitions (default: one per unit of the plan).
pub(crate) fn execute(
    settings: &Settings,
    read: &Read,
    count: Option<usize>,
) -> Result<(HeldSnapshot, PartitionedResult)> {
    let table = read.table().ok_or_else(|| {
        Error::with_message_and_status(
            "ExecutePartitions reads a whole table: SELECT * FROM <table> (queries are read \
             with ExecuteQuery)",
            Status::NotImplemented,
        )
    })?;
    let unload = settings.unload()?.tables(fbunload::exact_pattern(table));
    let held = unload.hold_snapshot().map_err(from_run)?;
    if held.plan.tables.first().map(|t| t.name.as_str()) != Some(table) {
        return Err(Error::with_message_and_status(
            format!(
                "ExecutePartitions: {} is not a table (names are case-sensitive; views are read \
                 with ExecuteQuery)",
                fbunload::printable(table)
            ),
            Status::NotFound,
        ));
    }
    let computed = &held.plan.tables[0].computed;
    if !computed.is_empty() {
        let names: Vec<_> = computed.iter().map(|c| fbunload::printable(c)).collect();
        return Err(Error::with_message_and_status(
            format!(
                "ExecutePartitions: table {} has computed columns ({}), which a partition does \
                 not read (it reads the stored ones); read the table with ExecuteQuery, which \
                 returns them",
                fbunload::printable(table),
                names.join(", ")
            ),
            Status::NotImplemented,
        ));
    }
    let ticket = held
        .ticket()
        .map(|t| (t.number, t.holder_transaction, t.oldest_active))
        .ok_or_else(|| {
            Error::with_message_and_status(
                "ExecutePartitions: the server shares no snapshot between connections \
                 (Firebird 4 or later does)",
                Status::NotImplemented,
            )
        })?;
    let partitions = held
        .shares(0, count)
        .map_err(from_run)?
        .iter()
        .enumerate()
        .map(|(seq, unit)| {
            Partition {
                format: FORMAT.into(),
                table: table.to_string(),
                ticket,
                seq,
                first_slot: unit.first_slot,
                end_slot: unit.end_slot,
            }
            .encode()
        })
        .collect();
    let schema = held.schemas[0].as_ref().clone();
    Ok((
        held,
        PartitionedResult {
            partitions,
            schema,
            rows_affected: -1,
        },
    ))
}

/// A partition's batches as its reading thread sends them.
struct PartitionReader {
    schema: SchemaRef,
    receiver: Option<Receiver<std::result::Result<RecordBatch, ArrowError>>>,
    worker: Option<JoinHandle<()>>,
}

impl Iterator for PartitionReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.receiver.as_ref()?.recv().ok();
        if item.is_none() {
            self.receiver = None;
            if let Some(worker) = self.worker.take() {
                if worker.join().is_err() {
                    return Some(Err(ArrowError::ExternalError(
                        "the partition's reader panicked".into(),
                    )));
                }
            }
        }
        item
    }
}

impl RecordBatchReader for PartitionReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for PartitionReader {
    fn drop(&mut self) {
        // The reader stops at its next batch once nobody takes them.
        drop(self.receiver.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn valid() -> Value {
        json!({
            "format": FORMAT,
            "table": "Odd \"name\"",
            "ticket": [7, 12, 3],
            "seq": 2,
            "first_slot": 40,
            "end_slot": null,
        })
    }

    #[test]
    fn a_partition_survives_its_bytes() {
        let partition = Partition::decode(valid().to_string().as_bytes()).unwrap();
        assert_eq!(partition.ticket, (7, 12, 3));
        assert_eq!(Partition::decode(&partition.encode()).unwrap(), partition);
    }

    #[test]
    fn other_bytes_are_refused() {
        let err = Partition::decode(b"{\"format\":\"x\"}").unwrap_err();
        assert_eq!(err.status, Status::InvalidArguments);
        assert!(Partition::decode(b"\xff").is_err());
    }

    /// Every field missing, null, of another type, out of range or added:
    /// refused before anything attaches, in one line.
    #[test]
    fn an_edited_partition_is_refused() {
        let edits: Vec<(&str, Option<Value>)> = vec![
            ("ticket", Some(Value::Null)),
            ("ticket", None),
            ("ticket", Some(json!("7,12,3"))),
            ("ticket", Some(json!([7, 12]))),
            ("ticket", Some(json!([7, 12, 3, 4]))),
            ("ticket", Some(json!([7, -12, 3]))),
            ("ticket", Some(json!([7.5, 12, 3]))),
            ("ticket", Some(json!([0, 12, 3]))),
            ("ticket", Some(json!([7, 12, 13]))),
            ("ticket", Some(json!([u64::MAX, 12, 3]))),
            ("ticket", Some(json!([7, 1u64 << 48, 3]))),
            ("ticket", Some(json!([7, 1e30, 3]))),
            ("table", Some(Value::Null)),
            ("table", None),
            ("table", Some(json!(5))),
            ("table", Some(json!(""))),
            ("table", Some(json!("T\u{0}X"))),
            ("table", Some(json!("T\nX"))),
            ("table", Some(json!("x".repeat(253)))),
            ("seq", Some(json!(-1))),
            ("seq", None),
            ("first_slot", Some(json!(u64::MAX))),
            ("first_slot", Some(json!(-1))),
            ("first_slot", Some(json!("40"))),
            ("first_slot", None),
            ("end_slot", None),
            ("end_slot", Some(json!(40))),
            ("end_slot", Some(json!(10))),
            ("end_slot", Some(json!(u64::MAX))),
            ("format", Some(json!("fbunload-adbc-partition/1"))),
            ("format", None),
            ("password", Some(json!("x"))),
        ];
        for (field, value) in edits {
            let mut edited = valid();
            let object = edited.as_object_mut().unwrap();
            match &value {
                Some(v) => object.insert(field.into(), v.clone()),
                None => object.remove(field),
            };
            let bytes = edited.to_string();
            let err = Partition::decode(bytes.as_bytes()).expect_err(&bytes);
            assert_eq!(err.status, Status::InvalidArguments, "{bytes}");
            assert!(
                err.message
                    .starts_with("not a partition of the fbunload driver"),
                "{bytes}: {}",
                err.message
            );
            assert!(!err.message.contains('\n'), "{bytes}: {}", err.message);
        }
        // The last partition's end is null, and the first's start 0.
        let mut edited = valid();
        edited["first_slot"] = json!(0);
        edited["end_slot"] = json!(8);
        assert!(Partition::decode(edited.to_string().as_bytes()).is_ok());
    }
}
