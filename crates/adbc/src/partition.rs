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
//! checks as `SetSqlQuery` does before it runs it.
//!
//! The snapshot lives as long as the statement that executed (until it
//! executes again or is released); a partition read after that fails
//! with "snapshot N is closed", never with other data.

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
const FORMAT: &str = "fbunload-adbc-partition/1";

/// One partition: where, at which snapshot, and which pages of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    format: String,
    pub table: String,
    /// `(number, holder_transaction, oldest_active)`; `None` where the
    /// server cannot share snapshots (Firebird 3, with
    /// `allow_inconsistent`), not made by this driver today.
    pub ticket: Option<(u64, u64, u64)>,
    /// Its position among the table's partitions.
    pub seq: usize,
    /// A query's partition: the query, and the table that splits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_by: Option<String>,
    pub first_slot: u64,
    pub end_slot: Option<u64>,
}

impl Partition {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a partition is plain numbers and text")
    }

    pub fn decode(bytes: &[u8]) -> Result<Partition> {
        serde_json::from_slice::<Partition>(bytes)
            .ok()
            .filter(|p| p.format == FORMAT)
            .ok_or_else(|| {
                Error::with_message_and_status(
                    "not a partition of the fbunload driver (ExecutePartitions makes them)",
                    Status::InvalidArguments,
                )
            })
    }

    fn ticket(&self) -> Option<SnapshotTicket> {
        self.ticket.map(
            |(number, holder_transaction, oldest_active)| SnapshotTicket {
                number,
                holder_transaction,
                oldest_active,
            },
        )
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
                // Checked as SetSqlQuery checks it: one SELECT.
                let spec = query_spec(sql, self.split_by.clone());
                fbunload::check_query(&spec).map_err(from_run)?;
                let unload = settings.unload()?.query_spec(spec);
                unload.join_snapshot_query(self.ticket().as_ref())
            }
            None => settings
                .unload()?
                .join_snapshot(self.ticket().as_ref(), &self.table),
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
/// a query likewise, by its driving table's units.
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
    let units = held.shares(0, count).map_err(from_run)?;
    Ok(partitioned(held, &units, None))
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
    Ok(partitioned(held, &units, Some(spec)))
}

/// The partitions of `units` of the first table (or `query`) of `held`'s
/// plan, and the snapshot they are read at.
fn partitioned(
    held: HeldSnapshot,
    units: &[Unit],
    query: Option<&fbunload::QuerySpec>,
) -> (HeldSnapshot, PartitionedResult) {
    let ticket = held
        .ticket()
        .map(|t| (t.number, t.holder_transaction, t.oldest_active));
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
    (held, result)
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
    use super::*;

    #[test]
    fn a_partition_survives_its_bytes() {
        let partition = Partition {
            format: FORMAT.into(),
            table: "Odd \"name\"".into(),
            ticket: Some((7, 12, 3)),
            seq: 2,
            query: None,
            split_by: None,
            first_slot: 40,
            end_slot: None,
        };
        assert_eq!(Partition::decode(&partition.encode()).unwrap(), partition);
    }

    #[test]
    fn other_bytes_are_refused() {
        let err = Partition::decode(b"{\"format\":\"x\"}").unwrap_err();
        assert_eq!(err.status, Status::InvalidArguments);
        assert!(Partition::decode(b"\xff").is_err());
    }
}
