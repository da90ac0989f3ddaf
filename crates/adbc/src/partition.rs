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
//! Any other SELECT is partitioned the same way: split by its driving
//! table (`adbc.fbunload.split_by`), into shares of that table's units;
//! otherwise one partition, which reads the whole query at the snapshot.
//! Such a partition carries the query's text, which `ReadPartition`
//! checks as `SetSqlQuery` does before it runs it. A table with computed
//! (`COMPUTED BY`) columns is partitioned as its `SELECT *` is read: the
//! query split by the table, so that its partitions hold the columns
//! `ExecuteQuery` returns, computed ones included.
//!
//! The snapshot lives as long as the statement that executed (until it
//! executes again or is released); a partition read after that fails
//! with "snapshot N is closed", never with other data.
//!
//! Partition bytes come from outside (a task queue, a file), so they are
//! checked before anything attaches: every field present, of its type,
//! nothing else, and within what a partition can hold (a ticket's numbers
//! those of a snapshot, slots below what a table can have; a query's
//! text one SELECT, and an unsplit query's partition the whole query). In
//! particular a partition, of a table or of a query, always names a
//! snapshot: there is no form that reads the current state (`/1` had one,
//! a null ticket, for servers without shared snapshots, which this driver
//! never made: `ExecutePartitions` refuses such a server). Partitions are
//! not signed: one edited to name another table, or to hold another
//! SELECT, reads that at the same snapshot.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use adbc_core::error::{Error, Result, Status};
use adbc_core::PartitionedResult;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use fbunload::{HeldSnapshot, SnapshotTicket, Unit};
use serde::{Deserialize, Serialize};

use crate::cancel::cancelled;
use crate::{from_run, Read, Settings};

/// What every partition says it is, so other bytes are refused plainly.
/// `/2`: the ticket is always there (in `/1` it could be null), and so
/// are `query` and `split_by` (null for a table's partition).
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

/// The longest `split_by`: such a name quoted, its quotes doubled.
const MAX_SPLIT_BY_BYTES: usize = 2 * MAX_NAME_BYTES + 2;

/// One partition: where, at which snapshot, and which pages of a table
/// (or of the table that splits a query).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    format: String,
    pub table: String,
    /// `(number, holder_transaction, oldest_active)`.
    pub ticket: (u64, u64, u64),
    /// Its position among the table's partitions.
    pub seq: usize,
    /// A query's partition: the query (`table` is then the query's name
    /// inside the facade), and the table that splits it; `null` for a
    /// table's, required all the same.
    #[serde(deserialize_with = "Option::deserialize")]
    pub query: Option<String>,
    #[serde(deserialize_with = "Option::deserialize")]
    pub split_by: Option<String>,
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
        self.check_query()
    }

    /// Whether `query` and `split_by` are those of a query's partition
    /// (or both null): the text one SELECT, checked as `SetSqlQuery`
    /// checks it, and a query read whole one partition from 0 to the end.
    fn check_query(&self) -> std::result::Result<(), String> {
        let Some(sql) = &self.query else {
            return match &self.split_by {
                None => Ok(()),
                Some(_) => Err("it has a split_by and no query".into()),
            };
        };
        if self.table != crate::read::QUERY_NAME {
            return Err(format!(
                "a query's partition names {:?}, not {:?}",
                self.table,
                crate::read::QUERY_NAME
            ));
        }
        if let Some(name) = &self.split_by {
            if name.is_empty()
                || name.len() > MAX_SPLIT_BY_BYTES
                || name.chars().any(char::is_control)
            {
                return Err(format!("its split_by {name:?} is not a table name"));
            }
        }
        fbunload::check_query(&query_spec(sql, self.split_by.clone()))
            .map_err(|e| format!("its query: {}", from_run(e).message))?;
        let whole = self.seq == 0 && self.first_slot == 0 && self.end_slot.is_none();
        if self.split_by.is_none() && !whole {
            return Err(format!(
                "a query without split_by is read whole, in one partition (seq 0, pages 0..end), \
                 not seq {} pages {}..{}",
                self.seq,
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
    pub fn read(
        &self,
        settings: &Settings,
        cancel: Arc<AtomicBool>,
    ) -> Result<Box<dyn RecordBatchReader + Send>> {
        let mut reader = match &self.query {
            Some(sql) => {
                // Checked as SetSqlQuery checks it (check_query): one SELECT.
                let spec = query_spec(sql, self.split_by.clone());
                let unload = settings.unload()?.query_spec(spec);
                unload.join_snapshot_query(Some(&self.ticket()))
            }
            None => settings
                .unload()?
                .join_snapshot(Some(&self.ticket()), &self.table),
        }
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
        // A cancel of the connection stops the read at its next batch.
        let worker = std::thread::spawn(move || {
            let read = reader.read(&unit, &mut |batch| {
                !cancel.load(Ordering::SeqCst) && sender.send(Ok(batch)).is_ok()
            });
            let failed = match read {
                Err(e) => Some(from_run(e)),
                Ok(_) if cancel.load(Ordering::SeqCst) => Some(cancelled()),
                Ok(_) => None,
            };
            if let Some(err) = failed {
                let _ = sender.send(Err(err));
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
/// into at most `count` partitions (default: one per unit of the plan);
/// a query likewise, by its driving table's units, and a table with
/// computed columns as the query its `SELECT *` is (module docs).
pub(crate) fn execute(
    settings: &Settings,
    read: &Read,
    count: Option<usize>,
) -> Result<(HeldSnapshot, PartitionedResult)> {
    let (table, sql) = match read {
        Read::Query(spec) => return execute_query(settings, spec, count),
        Read::WholeTable { table, sql } => (table, sql),
    };
    let unload = settings.unload()?.tables(fbunload::exact_pattern(table));
    let held = match unload.hold_snapshot() {
        Ok(held) if held.plan.tables.first().map(|t| t.name.as_str()) == Some(table) => held,
        // Not a table (a view, say): the query it is.
        Ok(_) | Err(fbunload::Error::Catalog(fbunload::CatalogError::NoTables(_))) => {
            return execute_query(settings, &query_spec(sql, None), count)
        }
        Err(e) => return Err(from_run(e)),
    };
    if !held.plan.tables[0].computed.is_empty() {
        // A table's units hold its stored columns only.
        drop(held);
        return execute_query(settings, &crate::read::split_by_itself(table, sql), count);
    }
    let units = held.shares(0, count).map_err(from_run)?;
    partitioned(held, &units, None)
}

/// `sql` as the facade's query (its name is never shown).
fn query_spec(sql: &str, split_by: Option<String>) -> fbunload::QuerySpec {
    fbunload::QuerySpec {
        name: crate::read::QUERY_NAME.into(),
        sql: sql.to_string(),
        split_by,
    }
}

/// [`execute`] of a query: held with the query planned at the snapshot,
/// and cut into at most `count` shares of its units (one if unsplit).
fn execute_query(
    settings: &Settings,
    spec: &fbunload::QuerySpec,
    count: Option<usize>,
) -> Result<(HeldSnapshot, PartitionedResult)> {
    let held = (settings.unload()?.query_spec(spec.clone()))
        .hold_snapshot()
        .map_err(from_run)?;
    let plan = &held.plan.tables[0];
    let units = plan.units_in_shares(0, count.unwrap_or(plan.unit_count), plan.slots());
    partitioned(held, &units, Some(spec))
}

/// The partitions of `units` of the first table (or `query`) of `held`'s
/// plan, and the snapshot they are read at; refused where the server
/// shares no snapshot, since a partition never reads the current state.
fn partitioned(
    held: HeldSnapshot,
    units: &[Unit],
    query: Option<&fbunload::QuerySpec>,
) -> Result<(HeldSnapshot, PartitionedResult)> {
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
    let partitions = units
        .iter()
        .enumerate()
        .map(|(seq, unit)| {
            Partition {
                format: FORMAT.into(),
                table: held.plan.tables[0].name.clone(),
                ticket,
                seq,
                query: query.map(|spec| spec.sql.clone()),
                split_by: query.and_then(|spec| spec.split_by.clone()),
                first_slot: unit.first_slot,
                end_slot: unit.end_slot,
            }
            .encode()
        })
        .collect();
    let schema = held.schemas[0].as_ref().clone();
    let result = PartitionedResult {
        partitions,
        schema,
        rows_affected: -1,
    };
    Ok((held, result))
}

/// A partition's batches as its reading thread sends them.
struct PartitionReader {
    schema: SchemaRef,
    /// Batches, or the error the read ended with (its errno is set when
    /// it is taken, on the caller's thread).
    receiver: Option<Receiver<std::result::Result<RecordBatch, Error>>>,
    worker: Option<JoinHandle<()>>,
}

impl Iterator for PartitionReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = (self.receiver.as_ref()?.recv().ok())
            .map(|item| item.map_err(crate::ffi::stream_error));
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
            "query": null,
            "split_by": null,
            "first_slot": 40,
            "end_slot": null,
        })
    }

    /// A share of a query split by its driving table.
    fn valid_query() -> Value {
        json!({
            "format": FORMAT,
            "table": crate::read::QUERY_NAME,
            "ticket": [7, 12, 3],
            "seq": 1,
            "query": "SELECT ID FROM \"Odd \"\"name\"\"\" WHERE ID < 10",
            "split_by": "\"Odd \"\"name\"\"\"",
            "first_slot": 8,
            "end_slot": 16,
        })
    }

    /// The one partition of a query read whole.
    fn valid_whole_query() -> Value {
        json!({
            "format": FORMAT,
            "table": crate::read::QUERY_NAME,
            "ticket": [7, 12, 3],
            "seq": 0,
            "query": "SELECT COUNT(*) FROM RDB$DATABASE",
            "split_by": null,
            "first_slot": 0,
            "end_slot": null,
        })
    }

    #[test]
    fn a_partition_survives_its_bytes() {
        let partition = Partition::decode(valid().to_string().as_bytes()).unwrap();
        assert_eq!(partition.ticket, (7, 12, 3));
        assert_eq!(Partition::decode(&partition.encode()).unwrap(), partition);
        for query in [valid_query(), valid_whole_query()] {
            let partition = Partition::decode(query.to_string().as_bytes()).unwrap();
            assert!(partition.query.is_some());
            assert_eq!(Partition::decode(&partition.encode()).unwrap(), partition);
        }
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
            ("query", None),
            ("split_by", None),
        ];
        for (field, value) in edits {
            refused(valid(), field, value);
        }
        // The last partition's end is null, and the first's start 0.
        let mut edited = valid();
        edited["first_slot"] = json!(0);
        edited["end_slot"] = json!(8);
        assert!(Partition::decode(edited.to_string().as_bytes()).is_ok());
    }

    /// `partition` with `field` set to `value` (or removed): refused
    /// before anything attaches, in one line.
    fn refused(mut edited: Value, field: &str, value: Option<Value>) {
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

    /// A query's partition likewise, its text checked as one SELECT, and
    /// one of a query read whole the whole query.
    #[test]
    fn an_edited_query_partition_is_refused() {
        let edits: Vec<(&str, Option<Value>)> = vec![
            ("query", None),
            ("query", Some(json!(5))),
            ("query", Some(json!(""))),
            ("query", Some(json!("DELETE FROM T"))),
            ("query", Some(json!("SELECT 1 FROM T; DELETE FROM T"))),
            ("query", Some(json!("EXECUTE BLOCK AS BEGIN END"))),
            ("query", Some(json!("SELECT NEXT VALUE FOR G FROM T"))),
            ("split_by", None),
            ("split_by", Some(json!(""))),
            ("split_by", Some(json!(7))),
            ("split_by", Some(json!("T\nX"))),
            ("split_by", Some(json!("x".repeat(507)))),
            ("table", Some(json!("ACCOUNTS"))),
            ("ticket", Some(Value::Null)),
        ];
        for (field, value) in edits.iter().cloned() {
            refused(valid_query(), field, value);
        }
        for (field, value) in edits {
            refused(valid_whole_query(), field, value);
        }
        // Read whole: one partition, pages 0 to the end.
        refused(valid_whole_query(), "seq", Some(json!(1)));
        refused(valid_whole_query(), "first_slot", Some(json!(8)));
        refused(valid_whole_query(), "end_slot", Some(json!(8)));
        // A table's partition has no split_by.
        refused(valid(), "split_by", Some(json!("T")));
    }
}
