//! Estimating each table's rows and bytes for `--plan` (see
//! [`fbunload_plan::estimate`]): a few one-row queries and one sample
//! query a table, in a snapshot of their own.

use std::sync::Arc;

use fbunload_client::{ClientError, Statement, Transaction, TransactionMode};
use fbunload_plan::estimate::{Counts, Estimate, Sample};
use fbunload_plan::{Kind, Plan, Role, RowPlaces, TablePlan};

use crate::firebird::subject;
use crate::held::used_slots_from;
use crate::{ExecError, Prepared};

impl Prepared {
    /// Estimates each table's rows and bytes and keeps them in the plan
    /// ([`TablePlan::estimate`]); views and queries get none, and so do
    /// the tables after one it fails on. Bounded work a table, whatever
    /// its size (see [`fbunload_plan::estimate`]).
    pub fn estimate(&mut self) -> Result<(), ExecError> {
        let client = ExecError::Client;
        let page_size = self.main.page_size().map_err(client)?;
        // Only Firebird 5 reads a DB_KEY range as those pages alone.
        let page_ranges = self.main.server_version().map_err(client)?.major >= 5;
        let tr = self
            .main
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .map_err(client)?;
        // Where rows lie, to read a small table's last slot off its
        // DB_KEYs (see `fbunload_plan::estimate`); unknown: searched.
        let places = if page_ranges {
            fbunload_plan::incremental::read_row_places(&tr)
                .map_err(client)?
                .0
        } else {
            None
        };
        let plan = Arc::make_mut(&mut self.plan);
        for table in plan.tables.iter_mut() {
            if table.kind != Kind::Table || table.role.is_helper() {
                continue;
            }
            table.estimate = Some(estimate(&tr, table, page_size, page_ranges, places)?);
        }
        Ok(())
    }
}

/// Cuts each table whose rows are mostly BLOBs into units by its BLOB
/// bytes ([`Plan::split_by_blob_bytes`]), for `workers` workers: its
/// pages alone made it too few units to share. Only tables read whole
/// (no `--where`) with BLOB columns that are fewer units than workers
/// are estimated (a few one-row queries each, in `tr`, the plan's: a transaction more would
/// move the snapshot number a file records), and only on Firebird 5,
/// which reads a DB_KEY range as those pages alone.
pub(crate) fn split_blob_tables(
    tr: &Transaction,
    plan: &mut Plan,
    workers: usize,
) -> Result<(), ExecError> {
    let candidates: Vec<usize> = (0..plan.tables.len())
        .filter(|&i| {
            let table = &plan.tables[i];
            table.kind == Kind::Table
                && table.role == Role::Whole
                && table.unit_count < workers
                // Its rows are a filter's: the table's BLOB bytes say
                // nothing of theirs.
                && table.condition.is_none()
                && !table.blob_columns().is_empty()
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let client = ExecError::Client;
    let main = tr.attachment();
    if main.server_version().map_err(client)?.major < 5 {
        return Ok(());
    }
    let page_size = main.page_size().map_err(client)?;
    let places = fbunload_plan::incremental::read_row_places(tr)
        .map_err(client)?
        .0;
    for i in candidates {
        // A table it fails on keeps its units; its read says what is wrong.
        let Ok(size) = estimate(tr, &plan.tables[i], page_size, true, places) else {
            continue;
        };
        if let (Some(pages), Some(bytes)) = (size.data_pages, size.blob_bytes) {
            plan.split_by_blob_bytes(i, pages, bytes, workers);
        }
    }
    Ok(())
}

fn estimate(
    tr: &Transaction,
    table: &TablePlan,
    page_size: u32,
    page_ranges: bool,
    places: Option<RowPlaces>,
) -> Result<Estimate, ExecError> {
    let pointer_pages = table.pointer_pages as u64;
    let dp_per_pp = table.dp_per_pp();
    if pointer_pages == 0 {
        return Ok(Estimate::empty(page_size));
    }
    if !page_ranges {
        // Counting reads every page: bounded only for one pointer page.
        let counted = if pointer_pages == 1 {
            Some(count(tr, table, &Sample::new(0))?)
        } else {
            None
        };
        return Ok(Estimate::without_page_ranges(page_size, counted));
    }
    if pointer_pages == 1 {
        if let Some(places) = places {
            if let Some(estimate) = small_table(tr, table, places, page_size)? {
                return Ok(estimate);
            }
        }
    }
    // Every pointer page but the last is full; the last is searched.
    let last = (pointer_pages - 1) * dp_per_pp;
    let used = used_slots_from(tr, table, last, last + dp_per_pp)?.unwrap_or(last);
    let sample = Sample::new(used);
    let counts = if used == 0 {
        Counts::default()
    } else {
        count(tr, table, &sample)?
    };
    Ok(Estimate::from_sample(&sample, counts, page_size))
}

/// A table of one pointer page counted whole in one query, if its rows
/// all lie within the first slots a sample covers; `None` if not (see
/// `fbunload_plan::estimate`).
fn small_table(
    tr: &Transaction,
    table: &TablePlan,
    places: RowPlaces,
    page_size: u32,
) -> Result<Option<Estimate>, ExecError> {
    let has_blobs = !table.blob_columns().is_empty();
    let counted = (|| {
        let mut stmt = tr.prepare_for(&subject(table), &table.small_table_sql(places))?;
        stmt.execute()?;
        if !stmt.fetch()? {
            return Err(ClientError::Invalid("the count returned no row".into()));
        }
        let rows = bigint(&stmt, 0);
        let beyond = bigint(&stmt, 3) != 0;
        if beyond {
            return Ok(None);
        }
        let counts = Counts {
            rows,
            blob_bytes: has_blobs.then(|| bigint(&stmt, 1)),
        };
        let used_slots = if rows == 0 { 0 } else { bigint(&stmt, 2) + 1 };
        Ok(Some((used_slots, counts)))
    })();
    let counted = counted
        .map_err(|e| ExecError::table(&table.name, format!("estimating its size failed: {e}")))?;
    Ok(counted.map(|(used_slots, counts)| {
        let counts = if used_slots == 0 {
            Counts::default()
        } else {
            counts
        };
        Estimate::from_sample(&Sample::new(used_slots), counts, page_size)
    }))
}

/// Runs a sample's query and adds up its rows.
fn count(tr: &Transaction, table: &TablePlan, sample: &Sample) -> Result<Counts, ExecError> {
    let has_blobs = !table.blob_columns().is_empty();
    let counted = (|| {
        let mut stmt = tr.prepare_for(&subject(table), &table.sample_sql(sample))?;
        stmt.execute()?;
        let mut counts = Counts {
            rows: 0,
            blob_bytes: has_blobs.then_some(0),
        };
        while stmt.fetch()? {
            counts.rows += bigint(&stmt, 0);
            if let Some(bytes) = counts.blob_bytes.as_mut() {
                *bytes += bigint(&stmt, 1);
            }
        }
        Ok::<_, ClientError>(counts)
    })();
    counted.map_err(|e| ExecError::table(&table.name, format!("estimating its size failed: {e}")))
}

/// A BIGINT column of the current row (0 if NULL).
fn bigint(stmt: &Statement, column: usize) -> u64 {
    let value = stmt.row().value(column).unwrap_or(&[0; 8]);
    i64::from_ne_bytes(value.try_into().unwrap_or([0; 8])).max(0) as u64
}
