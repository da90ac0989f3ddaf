//! `fbunload_gen`: makes deterministic Firebird test databases for fbunload.
//!
//! The binary `fbunload-gen` is a thin command line over [`generate`]; the
//! library exists so that integration tests of the other crates can make a
//! database of known content in a temporary directory in a few seconds.
//!
//! A database holds some of these tables (see [`Table`]):
//! - simplified TPC-C tables whose size scales with the number of
//!   warehouses and items ([`tpcc`]), for volume and speed;
//! - ALL_TYPES, a quoted mixed-case table and an empty table
//!   ([`special`]), and ARRAY_TYPES ([`arrays`]), for correctness at the
//!   edges;
//! - BIG_BLOB, made only when named: blobs of many MiB ([`blobs`]), for
//!   memory;
//! - BLOB_HEAVY and WIDE, made only when named: many rows of medium blobs,
//!   and hundreds of columns of mixed types ([`heavy`]), for scale.
//!
//! On request the TPC-C tables also get what an application keeps in the
//! database: foreign keys, a key trigger and its generator, a domain with
//! a CHECK, a computed column, a view and a selectable procedure
//! ([`application`]; `fbunload sample` asks for them).
//!
//! Everything is deterministic: the same options give byte-identical table
//! contents on every run, so tests can compare unloads against checksums
//! or golden files. Rows are produced by the engine itself in `EXECUTE
//! BLOCK` loops, one statement and one transaction per chunk of about
//! [`GenOptions::chunk_rows`] rows: a round trip per row would be far too
//! slow, one transaction for millions of rows too big.

pub mod application;
pub mod arrays;
pub mod bank;
pub mod blobs;
pub mod heavy;
pub mod many;
pub mod special;
pub mod sql;
pub mod tables;
pub mod tpcc;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fbunload_client::{Attachment, Client, ClientError, ConnectOptions, TransactionMode};

pub use tables::{parse_table_list, Table};

/// The user every generated database is created and meant to be read with.
pub const USER: &str = "SYSDBA";
/// The password of [`USER`] (the embedded engine does not check it).
pub const PASSWORD: &str = "masterkey";

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenOptions {
    /// The database file to create.
    pub database: PathBuf,
    /// TPC-C scale: WAREHOUSE rows; the other TPC-C tables but ITEM scale
    /// with it.
    pub warehouses: u32,
    /// ITEM rows (and STOCK rows per warehouse).
    pub items: u32,
    /// The tables to create; order does not matter.
    pub tables: Vec<Table>,
    pub page_size: u32,
    /// Replace an existing file instead of refusing.
    pub force: bool,
    /// About how many rows one statement and transaction inserts.
    pub chunk_rows: u64,
    /// The size of each of BIG_BLOB's two big blobs, in MiB.
    pub blob_mb: u32,
    /// BLOB_HEAVY's rows.
    pub blob_rows: u64,
    /// The size of all of BLOB_HEAVY's blobs together, in MiB.
    pub blob_total_mb: u64,
    /// WIDE's columns, its key included.
    pub wide_columns: u32,
    /// WIDE's rows.
    pub wide_rows: u64,
    /// How many ERP-like tables to make besides `tables` ([`many`]).
    pub many_tables: usize,
    /// About how many rows those tables hold in all.
    pub many_rows: u64,
    /// A server (`host` or `host/port`) to create the database on, at
    /// the path `database` names there; `None`: the client's engine
    /// (embedded) at a local path.
    pub server: Option<String>,
    /// The password of [`USER`] (a server checks it; embedded does not).
    pub password: String,
    /// Add the application's objects to the TPC-C tables
    /// ([`application`]); needs all of them.
    pub application: bool,
}

impl GenOptions {
    /// Every table, one warehouse, 100,000 items, 8 KiB pages.
    pub fn new(database: impl Into<PathBuf>) -> GenOptions {
        GenOptions {
            database: database.into(),
            warehouses: 1,
            items: 100_000,
            tables: Table::ALL.to_vec(),
            page_size: 8192,
            force: false,
            chunk_rows: 100_000,
            blob_mb: 100,
            blob_rows: 10_000,
            blob_total_mb: 2048,
            wide_columns: 500,
            wide_rows: 100_000,
            many_tables: 0,
            many_rows: 1_000_000,
            server: None,
            password: PASSWORD.into(),
            application: false,
        }
    }

    fn scale(&self) -> tpcc::Scale {
        tpcc::Scale {
            warehouses: self.warehouses as u64,
            items: self.items as u64,
        }
    }

    /// How many rows `table` gets with these options.
    pub fn rows(&self, table: Table) -> u64 {
        match table {
            Table::AllTypes => special::ALL_TYPES_ROWS,
            Table::Mixed => special::MIXED_ROWS,
            Table::EmptyTable => 0,
            Table::ArrayTypes => arrays::ARRAY_TYPES_ROWS,
            Table::BigBlob => blobs::ROWS,
            Table::BlobHeavy => self.blob_rows,
            Table::Wide => self.wide_rows,
            tpcc_table => tpcc::rows(tpcc_table, self.scale()),
        }
    }
}

/// What was generated for one table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableReport {
    pub table: Table,
    pub rows: u64,
    /// Filling plus building the primary key.
    pub seconds: f64,
}

/// What [`generate`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct GenReport {
    /// The absolute path of the new database.
    pub database: PathBuf,
    pub tables: Vec<TableReport>,
    /// The ERP-like tables, if any: how many, their rows, and seconds
    /// (creating and filling them).
    pub many: Option<(usize, u64, f64)>,
    /// Everything, creating the database included.
    pub seconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("{0}")]
    Invalid(String),
    #[error("{} already exists (use --force to replace it)", .0.display())]
    Exists(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{context}: {source}")]
    Firebird {
        context: String,
        source: ClientError,
    },
}

fn fb(context: impl Into<String>) -> impl FnOnce(ClientError) -> GenError {
    let context = context.into();
    move |source| GenError::Firebird { context, source }
}

/// A new database for a test: `database` (a path, or a server's
/// `host:path`) created as [`USER`] with `password`, UTF8, pages of
/// `page_size` bytes, holding what `statements` make, each committed on
/// its own. Panics on any failure, naming the statement.
pub fn create_test_database(
    client: &Arc<Client>,
    database: &str,
    password: &str,
    page_size: u32,
    statements: &[&str],
) -> Attachment {
    let create = format!(
        "CREATE DATABASE {} USER {} PASSWORD {} PAGE_SIZE {page_size} SET NAMES 'UTF8' \
         DEFAULT CHARACTER SET UTF8",
        sql::literal(database),
        sql::literal(USER),
        sql::literal(password),
    );
    let att = Attachment::create_database(client, &create)
        .unwrap_or_else(|e| panic!("creating {database}: {e}"));
    for sql in statements {
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        tr.commit().unwrap();
    }
    att
}

/// How to attach to a generated database (as [`USER`], UTF8).
pub fn connect_options(database: &Path) -> ConnectOptions {
    ConnectOptions {
        database: database.to_string_lossy().into_owned(),
        user: Some(USER.into()),
        password: Some(PASSWORD.into()),
        charset: "UTF8".into(),
        ..Default::default()
    }
}

/// Creates `opts.database` and fills the chosen tables.
pub fn generate(client: &Arc<Client>, opts: &GenOptions) -> Result<GenReport, GenError> {
    generate_with(client, opts, |_| {})
}

/// [`generate`], calling `on_table` as each table is finished (for progress
/// output).
pub fn generate_with(
    client: &Arc<Client>,
    opts: &GenOptions,
    mut on_table: impl FnMut(&TableReport),
) -> Result<GenReport, GenError> {
    let started = Instant::now();
    validate(opts)?;
    let (path, database) = match &opts.server {
        // The path is the server's: nothing of it is looked at here.
        Some(server) => {
            let text = opts.database.to_str().ok_or_else(|| {
                GenError::Invalid(format!("{} is not valid UTF-8", opts.database.display()))
            })?;
            (opts.database.clone(), format!("{server}:{text}"))
        }
        None => {
            let path = std::path::absolute(&opts.database).map_err(|source| GenError::Io {
                path: opts.database.clone(),
                source,
            })?;
            let text = path.to_str().ok_or_else(|| {
                GenError::Invalid(format!("{} is not valid UTF-8", path.display()))
            })?;
            let text = text.to_string();
            if path.exists() {
                if !opts.force {
                    return Err(GenError::Exists(path));
                }
                std::fs::remove_file(&path).map_err(|source| GenError::Io {
                    path: path.clone(),
                    source,
                })?;
            }
            (path, text)
        }
    };

    let create = format!(
        "CREATE DATABASE {} USER {} PASSWORD {} PAGE_SIZE {} DEFAULT CHARACTER SET UTF8",
        sql::literal(&database),
        sql::literal(USER),
        sql::literal(&opts.password),
        opts.page_size
    );
    // The attachment CREATE DATABASE returns has connection character set
    // NONE; literals with non-ASCII text must arrive as UTF8, so reattach.
    drop(Attachment::create_database(client, &create).map_err(fb(format!("creating {database}")))?);
    let db = Attachment::connect(
        client,
        &ConnectOptions {
            database: database.clone(),
            password: Some(opts.password.clone()),
            ..connect_options(&path)
        },
    )
    .map_err(fb(format!("attaching {database}")))?;

    let mut tables = opts.tables.clone();
    tables.sort();
    tables.dedup();

    // All DDL first, committed: a table cannot take rows in the transaction
    // that created it.
    let tr = db
        .start_transaction(TransactionMode::ReadWrite)
        .map_err(fb("starting a transaction"))?;
    for &table in &tables {
        tr.execute(&create_sql(table, opts))
            .map_err(fb(format!("creating table {table}")))?;
    }
    tr.commit().map_err(fb("committing the tables"))?;

    let mut reports = Vec::with_capacity(tables.len());
    for &table in &tables {
        let table_started = Instant::now();
        fill(&db, table, opts)?;
        let report = TableReport {
            table,
            rows: opts.rows(table),
            seconds: table_started.elapsed().as_secs_f64(),
        };
        on_table(&report);
        reports.push(report);
    }
    if opts.application {
        add_application(&db, opts)?;
    }
    let many = match opts.many_tables {
        0 => None,
        n => {
            let started = Instant::now();
            let rows = fill_many(&db, n, opts)?;
            Some((n, rows, started.elapsed().as_secs_f64()))
        }
    };
    Ok(GenReport {
        database: path,
        tables: reports,
        many,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn validate(opts: &GenOptions) -> Result<(), GenError> {
    if opts.tables.is_empty() && opts.many_tables == 0 {
        return Err(GenError::Invalid("no tables chosen".into()));
    }
    if opts.warehouses == 0 {
        return Err(GenError::Invalid("--warehouses must be at least 1".into()));
    }
    if opts.items == 0 {
        return Err(GenError::Invalid("--items must be at least 1".into()));
    }
    if ![4096, 8192, 16384, 32768].contains(&opts.page_size) {
        return Err(GenError::Invalid(format!(
            "--page-size must be 4096, 8192, 16384 or 32768, not {}",
            opts.page_size
        )));
    }
    if opts.chunk_rows == 0 {
        return Err(GenError::Invalid("chunk_rows must be at least 1".into()));
    }
    if opts.tables.contains(&Table::BlobHeavy)
        && (opts.blob_rows == 0
            || heavy::blob_bytes_per_row(opts.blob_rows, opts.blob_total_mb) == 0)
    {
        return Err(GenError::Invalid(
            "--blob-rows and --blob-total-mb must leave each BLOB_HEAVY row a byte at least".into(),
        ));
    }
    if opts.tables.contains(&Table::Wide) && !(2..=1000).contains(&opts.wide_columns) {
        return Err(GenError::Invalid(format!(
            "--wide-columns must be 2 to 1000 (a record's 64 KiB), not {}",
            opts.wide_columns
        )));
    }
    if opts.application {
        if let Some(missing) = application::TABLES
            .iter()
            .find(|t| !opts.tables.contains(t))
        {
            return Err(GenError::Invalid(format!(
                "the application's objects need every TPC-C table: add {missing} to the tables"
            )));
        }
    }
    Ok(())
}

fn create_sql(table: Table, opts: &GenOptions) -> String {
    match table {
        Table::AllTypes => special::all_types_create_sql(),
        Table::Mixed => special::mixed_create_sql(),
        Table::EmptyTable => special::empty_create_sql().to_string(),
        Table::ArrayTypes => arrays::array_types_create_sql().to_string(),
        Table::BigBlob => blobs::create_sql().to_string(),
        Table::BlobHeavy => heavy::blob_heavy_create_sql().to_string(),
        Table::Wide => heavy::wide_create_sql(opts.wide_columns),
        tpcc_table => tpcc::create_sql(tpcc_table).to_string(),
    }
}

/// The application's objects ([`application`]), once the tables are
/// filled and keyed: the foreign keys are checked against the rows, and
/// no trigger fires while they are inserted.
fn add_application(db: &Attachment, opts: &GenOptions) -> Result<(), GenError> {
    let tr = db
        .start_transaction(TransactionMode::ReadWrite)
        .map_err(fb("starting a transaction"))?;
    for sql in application::ddl() {
        let what = sql.lines().next().unwrap_or(sql);
        tr.execute(sql).map_err(fb(what))?;
    }
    tr.commit()
        .map_err(fb("committing the application's objects"))?;
    // The generator exists once committed.
    let tr = db
        .start_transaction(TransactionMode::ReadWrite)
        .map_err(fb("starting a transaction"))?;
    let sql = application::generator_sql(opts.items);
    let mut stmt = tr.prepare(&sql).map_err(fb(&sql))?;
    stmt.execute().map_err(fb(&sql))?;
    stmt.fetch().map_err(fb(&sql))?;
    drop(stmt);
    tr.commit().map_err(fb("committing the generator's value"))
}

/// Creates and fills the ERP-like tables ([`many`]); returns their rows.
fn fill_many(db: &Attachment, tables: usize, opts: &GenOptions) -> Result<u64, GenError> {
    // A few hundred DDL statements a transaction: one for 5,000 tables
    // holds the engine's metadata changes of all of them at once.
    for first in (1..=tables).step_by(250) {
        let tr = db
            .start_transaction(TransactionMode::ReadWrite)
            .map_err(fb("starting a transaction"))?;
        for i in first..(first + 250).min(tables + 1) {
            tr.execute(&many::create_sql(i))
                .map_err(fb(format!("creating table {}", many::table_name(i))))?;
        }
        tr.commit().map_err(fb("committing the tables"))?;
    }
    // Small tables many to a transaction, about chunk_rows rows each.
    let counts = many::row_counts(tables, opts.many_rows);
    let mut tr = None;
    let mut in_transaction = 0;
    for (index, &count) in counts.iter().enumerate() {
        let i = index + 1;
        let mut lo = 0;
        while lo < count {
            let hi = (lo + opts.chunk_rows).min(count);
            if tr.is_none() {
                tr = Some(
                    db.start_transaction(TransactionMode::ReadWrite)
                        .map_err(fb("starting a transaction"))?,
                );
            }
            let t = tr.as_ref().expect("started above");
            t.execute(&many::block(i, lo, hi))
                .map_err(fb(format!("rows {lo}..{hi} of {}", many::table_name(i))))?;
            in_transaction += hi - lo;
            if in_transaction >= opts.chunk_rows {
                tr.take()
                    .expect("started above")
                    .commit()
                    .map_err(fb(format!("committing rows of {}", many::table_name(i))))?;
                in_transaction = 0;
            }
            lo = hi;
        }
    }
    if let Some(tr) = tr {
        tr.commit().map_err(fb("committing the last rows"))?;
    }
    Ok(counts.iter().sum())
}

/// Calls `step_rows(lo, hi)` for consecutive ranges of `rows`, `step`
/// rows each (the last fewer).
fn chunked(
    rows: u64,
    step: u64,
    mut step_rows: impl FnMut(u64, u64) -> Result<(), GenError>,
) -> Result<(), GenError> {
    let mut lo = 0;
    while lo < rows {
        let hi = (lo + step).min(rows);
        step_rows(lo, hi)?;
        lo = hi;
    }
    Ok(())
}

fn fill(db: &Attachment, table: Table, opts: &GenOptions) -> Result<(), GenError> {
    let run = |statements: &[String], what: &str| -> Result<(), GenError> {
        let tr = db
            .start_transaction(TransactionMode::ReadWrite)
            .map_err(fb("starting a transaction"))?;
        for statement in statements {
            tr.execute(statement)
                .map_err(fb(format!("{what} of {table}")))?;
        }
        tr.commit()
            .map_err(fb(format!("committing {what} of {table}")))
    };
    match table {
        Table::AllTypes => run(&[special::all_types_fill_sql()], "rows"),
        Table::Mixed => run(&special::mixed_fill_sql(), "rows"),
        Table::EmptyTable => Ok(()),
        // SQL cannot write an array: the client's slice calls do.
        Table::ArrayTypes => arrays::fill_array_types(db).map_err(fb("rows of ARRAY_TYPES")),
        Table::BigBlob => run(&blobs::fill_sql(opts.blob_mb), "rows"),
        Table::BlobHeavy => {
            let bytes = heavy::blob_bytes_per_row(opts.blob_rows, opts.blob_total_mb);
            let step = heavy::blob_rows_per_chunk(opts.blob_rows, opts.blob_total_mb);
            chunked(opts.blob_rows, step, |lo, hi| {
                run(
                    &[heavy::blob_heavy_block(lo, hi, bytes)],
                    &format!("rows {lo}..{hi}"),
                )
            })
        }
        Table::Wide => chunked(opts.wide_rows, opts.chunk_rows, |lo, hi| {
            run(
                &[heavy::wide_block(opts.wide_columns, lo, hi)],
                &format!("rows {lo}..{hi}"),
            )
        }),
        tpcc_table => {
            let units = tpcc::units(tpcc_table, opts.scale());
            let step = tpcc::units_per_chunk(tpcc_table, opts.chunk_rows);
            let mut lo = 0;
            while lo < units {
                let hi = (lo + step).min(units);
                let block = tpcc::block(tpcc_table, opts.scale(), lo, hi);
                run(&[block], &format!("rows {lo}..{hi}"))?;
                lo = hi;
            }
            run(
                &[tpcc::primary_key_sql(tpcc_table).to_string()],
                "the primary key",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_before_touching_the_disk() {
        let mut opts = GenOptions::new("/nonexistent/x.fdb");
        opts.page_size = 1000;
        assert!(matches!(validate(&opts), Err(GenError::Invalid(_))));
        let mut opts = GenOptions::new("/nonexistent/x.fdb");
        opts.tables.clear();
        assert!(validate(&opts).is_err());
        assert!(validate(&GenOptions::new("/nonexistent/x.fdb")).is_ok());
    }

    #[test]
    fn row_counts_per_table() {
        let mut opts = GenOptions::new("x.fdb");
        opts.warehouses = 2;
        opts.items = 1000;
        assert_eq!(opts.rows(Table::Stock), 2000);
        assert_eq!(opts.rows(Table::Customer), 60_000);
        assert_eq!(opts.rows(Table::AllTypes), 12);
        assert_eq!(opts.rows(Table::EmptyTable), 0);
    }
}
