//! What a statement's SQL reads, and reading it through the facade.
//!
//! A tool that reads "a table" through ADBC sends `SELECT * FROM T`. Read
//! as a query that is one unit on one attachment; read as the table, it is
//! every unit in parallel, which is why fbunload exists. So that exact
//! form, naming a table, is read as the table (what `fbunload.read_arrow`
//! returns); every other SELECT as the query it is (what
//! `fbunload.read_sql` returns), split by a driving table only when the
//! statement names one (`adbc.fbunload.split_by`), because splitting
//! changes nothing only for queries the caller knows to be row-for-row.
//!
//! The SQL decides the columns, though: a table read leaves out computed
//! (`COMPUTED BY`) columns, which `SELECT *` returns. So a table that has
//! them is read as the query split by itself, still in parallel at one
//! snapshot, and its computed columns come as the engine computes them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use adbc_core::error::{Error, Result, Status};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type};
use arrow_array::{new_null_array, Array, ArrayRef, Int64Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use fbunload::{CatalogError, Prepared, QuerySpec, RecordBatches, Unload};

use crate::ffi::stream_error;
use crate::{from_run, Settings};

/// The name a query's result has inside the facade; never shown.
pub(crate) const QUERY_NAME: &str = "QUERY";

/// What a statement reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// `SELECT * FROM T`: table `T` (its name in the catalog) if it is one,
    /// else the same text as a query (a view, say).
    WholeTable { table: String, sql: String },
    /// Any other SELECT.
    Query(QuerySpec),
}

impl Read {
    /// The read of `sql`; an error, in one line, for anything but one
    /// SELECT (the driver is read-only) and for a split the query cannot
    /// take.
    pub fn new(sql: &str, split_by: Option<&str>) -> Result<Read> {
        let spec = QuerySpec {
            name: QUERY_NAME.into(),
            sql: sql.to_string(),
            split_by: split_by.map(str::to_string),
        };
        fbunload::check_query(&spec).map_err(from_run)?;
        Ok(match whole_table(sql) {
            Some(table) if split_by.is_none() => Read::WholeTable {
                table,
                sql: sql.to_string(),
            },
            _ => Read::Query(spec),
        })
    }

    /// `SELECT * FROM table`: what `GetTableSchema` describes.
    pub(crate) fn whole_table(table: &str) -> Read {
        Read::WholeTable {
            table: table.to_string(),
            sql: format!("SELECT * FROM {}", fbunload::quote_identifier(table)),
        }
    }

    /// The table whose units [`crate::Partition`]s are, if this reads one.
    pub fn table(&self) -> Option<&str> {
        match self {
            Read::WholeTable { table, .. } => Some(table),
            Read::Query(_) => None,
        }
    }

    /// How the facade reads this: for `SELECT * FROM T`, the table as a
    /// table if it is one and has no computed column, with its catalog
    /// read (module docs).
    fn plan(&self, settings: &Settings) -> Result<Planned> {
        let unload = settings.unload()?;
        let (table, sql) = match self {
            Read::WholeTable { table, sql } => (table, sql),
            Read::Query(spec) => return Ok(Planned::Other(unload.query_spec(spec.clone()))),
        };
        let as_table = unload.clone().tables(fbunload::exact_pattern(table));
        match as_table.prepare() {
            Ok(prepared) if prepared.plan.tables[0].computed.is_empty() => {
                Ok(Planned::Table(as_table, Box::new(prepared)))
            }
            Ok(_) => Ok(Planned::Other(
                unload.query_spec(split_by_itself(table, sql)),
            )),
            Err(e) if is_not_a_table(&e) => {
                Ok(Planned::Other(unload.query(QUERY_NAME, sql.clone())))
            }
            Err(e) => Err(from_run(e)),
        }
    }

    /// Runs the read: batches as the workers read them, in order, and
    /// what stops it from another thread.
    pub fn execute(
        &self,
        settings: &Settings,
    ) -> Result<(Box<dyn RecordBatchReader + Send>, Arc<AtomicBool>)> {
        let batches = self.start(settings)?;
        let schema = batches.schema(0);
        let cancel = batches.cancel_flag();
        Ok((Box::new(RunReader { batches, schema }), cancel))
    }

    /// Starts the run: its batches as they come.
    fn start(&self, settings: &Settings) -> Result<RecordBatches> {
        Ok(match self.plan(settings)? {
            Planned::Table(unload, prepared) => unload.record_batches_of(*prepared),
            Planned::Other(unload) => unload.record_batches().map_err(from_run)?,
        })
    }

    /// The result's schema, from the catalog or the server's description
    /// of the query: no row is read.
    pub fn schema(&self, settings: &Settings) -> Result<Schema> {
        let prepared = match self.plan(settings)? {
            Planned::Table(_, prepared) => *prepared,
            Planned::Other(unload) => unload.prepare().map_err(from_run)?,
        };
        let schema = prepared.schemas.first().ok_or_else(|| {
            Error::with_message_and_status("the read has no result", Status::Internal)
        })?;
        Ok(schema.as_ref().clone())
    }
}

/// The reads of several bound rows, one after another, as one result:
/// each row's batches in the row's order. Each row is a query of its own
/// text, whose result types Firebird derives from its literals: a column
/// all NULL in a row (a bound NULL is a text NULL to Firebird) takes the
/// type the other rows give it, and integers of different widths the
/// widest; other differences are refused. So the rows are read before the
/// result is handed out, and held in memory. `cancel` (set from another
/// thread) stops the reading between rows and inside one, whose run it
/// stops, and later ends the result.
pub fn execute_rows(
    reads: &[Read],
    settings: &Settings,
    cancel: Arc<AtomicBool>,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let cancelled = || cancel.load(Ordering::SeqCst);
    let mut results = Vec::with_capacity(reads.len());
    for read in reads {
        if cancelled() {
            return Err(crate::cancel::cancelled());
        }
        let mut run = read.start(settings)?;
        let schema = run.schema(0);
        let mut batches = Vec::new();
        loop {
            // A row's run may wait long for its first batch (a slow
            // query): look at the cancel in between.
            match run.next_within(CANCEL_LOOK) {
                None if cancelled() => {
                    // Dropping the run stops it (its connections are
                    // interrupted) and waits for it.
                    run.cancel();
                    return Err(crate::cancel::cancelled());
                }
                None => {}
                Some(None) => break,
                Some(Some(Ok(streamed))) => batches.push(streamed.batch),
                Some(Some(Err(e))) => return Err(from_run(e)),
            }
        }
        results.push((schema, batches));
    }
    let schema = Arc::new(common_schema(&results)?);
    let mut batches = Vec::new();
    for (_, row_batches) in &results {
        for batch in row_batches {
            batches.push(conform(batch, &schema)?);
        }
    }
    let reader = arrow_array::RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let inner = Box::new(reader);
    Ok(Box::new(crate::cancel::Cancellable {
        inner,
        flag: cancel,
    }))
}

/// How often reading bound rows looks at a cancel while it waits.
const CANCEL_LOOK: std::time::Duration = std::time::Duration::from_millis(50);

/// The schema every row's result is given (see [`execute_rows`]).
fn common_schema(results: &[(SchemaRef, Vec<RecordBatch>)]) -> Result<Schema> {
    let first = &results[0].0;
    let mut fields = Vec::with_capacity(first.fields().len());
    for (i, field) in first.fields().iter().enumerate() {
        // The types of the rows where this column holds a value.
        let mut types: Vec<&DataType> = Vec::new();
        for (schema, batches) in results {
            let Some(other) = schema.fields().get(i) else {
                return Err(differ(format!(
                    "{} columns and {}",
                    first.fields().len(),
                    schema.fields().len()
                )));
            };
            let valued = batches
                .iter()
                .any(|b| b.column(i).null_count() < b.num_rows());
            if valued && !types.contains(&other.data_type()) {
                types.push(other.data_type());
            }
        }
        let data_type = match types.as_slice() {
            [] => field.data_type().clone(),
            [one] => (*one).clone(),
            many if many.iter().all(|t| is_integer(t)) => DataType::Int64,
            many => {
                let names: Vec<String> = many.iter().map(ToString::to_string).collect();
                return Err(differ(format!(
                    "column {} is {}",
                    field.name(),
                    names.join(" in one and ")
                )));
            }
        };
        fields.push(Field::new(field.name(), data_type, true));
    }
    Ok(Schema::new(fields))
}

fn is_integer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int16 | DataType::Int32 | DataType::Int64
    )
}

fn differ(what: String) -> Error {
    Error::with_message_and_status(
        format!("the bound rows' results differ: {what}; bind values of one type per column"),
        Status::InvalidArguments,
    )
}

/// `batch` with `schema`'s types: a column all NULL as NULLs of its type,
/// integers widened.
fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| -> Result<ArrayRef> {
            let wanted = field.data_type();
            if column.data_type() == wanted {
                return Ok(column.clone());
            }
            if column.null_count() == column.len() {
                return Ok(new_null_array(wanted, column.len()));
            }
            let wide: Vec<Option<i64>> = match column.data_type() {
                DataType::Int16 => column
                    .as_primitive::<Int16Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                DataType::Int32 => column
                    .as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                other => {
                    return Err(differ(format!(
                        "column {} is {other} and {wanted}",
                        field.name()
                    )))
                }
            };
            Ok(Arc::new(Int64Array::from(wide)))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// `sql`, a `SELECT *` of `table`, as the query split by the table: how
/// a table with computed columns is read, and partitioned.
pub(crate) fn split_by_itself(table: &str, sql: &str) -> QuerySpec {
    QuerySpec {
        name: QUERY_NAME.into(),
        sql: sql.to_string(),
        split_by: Some(fbunload::quote_identifier(table)),
    }
}

/// A read as the facade will run it.
enum Planned {
    /// A table without computed columns, its catalog read.
    Table(Unload, Box<Prepared>),
    /// A query (a view's, or a table's with computed columns).
    Other(Unload),
}

/// A `SELECT * FROM T` whose T is not a table: read as a query instead.
fn is_not_a_table(err: &fbunload::Error) -> bool {
    matches!(err, fbunload::Error::Catalog(CatalogError::NoTables(_)))
}

/// The table of `SELECT * FROM name` (any case and spacing; a plain name
/// upper-cased as SQL does, a `"quoted"` one as written), else `None`.
pub(crate) fn whole_table(sql: &str) -> Option<String> {
    let rest = strip_keyword(sql.trim(), "SELECT")?.trim_start();
    let rest = rest.strip_prefix('*')?.trim_start();
    let name = strip_keyword(rest, "FROM")?.trim();
    if let Some(quoted) = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        let lone_quote = quoted.replace("\"\"", "").contains('"');
        return (!quoted.is_empty() && !lone_quote).then(|| quoted.replace("\"\"", "\""));
    }
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    plain.then(|| name.to_ascii_uppercase())
}

/// `text` after `keyword` (any case) and the space or `*`/`"` that ends it.
fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = &text[keyword.len()..];
    let ends = rest.starts_with(|c: char| c.is_whitespace() || c == '*' || c == '"');
    (head.eq_ignore_ascii_case(keyword) && ends).then_some(rest)
}

/// A run's batches as the Arrow stream ADBC hands out; dropping it stops
/// the run.
struct RunReader {
    batches: RecordBatches,
    schema: SchemaRef,
}

impl Iterator for RunReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next().map(|item| {
            item.map(|streamed| streamed.batch)
                .map_err(|e| stream_error(from_run(e)))
        })
    }
}

impl RecordBatchReader for RunReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_table_is_named_as_the_catalog_has_it() {
        assert_eq!(whole_table("select * from stock"), Some("STOCK".into()));
        assert_eq!(
            whole_table("  SELECT *\n FROM  Stock  "),
            Some("STOCK".into())
        );
        assert_eq!(
            whole_table("SELECT*FROM\"Odd \"\"x\"\"\""),
            Some("Odd \"x\"".into())
        );
        assert_eq!(whole_table("SELECT * FROM T1$_X"), Some("T1$_X".into()));
    }

    #[test]
    fn anything_more_is_a_query() {
        for sql in [
            "SELECT * FROM STOCK WHERE S_W_ID = 1",
            "SELECT * FROM STOCK s",
            "SELECT A FROM STOCK",
            "SELECT * FROM \"a\"b\"",
            "SELECT * FROM 1X",
            "SELECTED * FROM T",
            "SELECT * FROMT",
        ] {
            assert_eq!(whole_table(sql), None, "{sql}");
        }
    }

    #[test]
    fn only_a_select_is_read() {
        let err = Read::new("DELETE FROM STOCK", None).unwrap_err();
        assert_eq!(err.status, Status::InvalidArguments);
        assert_eq!(
            err.message,
            "the fbunload driver is read-only: only a SELECT can be run, and this begins with \
             DELETE"
        );
        assert!(Read::new("SELECT 1 FROM RDB$DATABASE; DELETE FROM T", None).is_err());
        assert!(matches!(
            Read::new("select * from stock", None),
            Ok(Read::WholeTable { .. })
        ));
        assert!(matches!(
            Read::new("select * from stock", Some("STOCK")),
            Ok(Read::Query(_))
        ));
    }

    #[test]
    fn a_split_that_would_change_the_result_is_refused() {
        let err = Read::new("SELECT COUNT(*) FROM STOCK", Some("STOCK")).unwrap_err();
        assert!(
            err.message.contains("adbc.fbunload.split_by"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("--"), "{}", err.message);
    }
}
