//! A sample database to try fbunload on, made by the installed program
//! itself: a newcomer with `pip install '.[embedded]'` has the
//! engine but no database, and the README's examples need one.
//!
//! It is the generator the tests use (`fbunload-gen`): TPC-C-like tables
//! whose size scales with the warehouses, and ALL_TYPES, `Mixed Case "Quoted"`,
//! EMPTY_TABLE and ARRAY_TYPES with every Firebird column type and its edge values (ARRAY
//! columns of each element type, one and two dimensions), so what a user tries first is
//! what the tests check. The TPC-C tables also get what an application
//! keeps in the database (foreign keys, a key trigger and its generator, a
//! domain with a CHECK, a computed column, a view, a selectable procedure:
//! `fbunload_gen::application`), so that a load into PostgreSQL shows
//! their translation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The client library handle [`create_sample`] takes (from `Unload::load_client`).
pub use fbunload_client::Client;
use fbunload_client::{Attachment, TransactionMode};
use fbunload_gen::{GenOptions, Table};

pub use fbunload_gen::{GenError as SampleError, GenReport as SampleReport, PASSWORD, USER};

/// What to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleOptions {
    pub database: PathBuf,
    /// TPC-C scale: 10 districts, 30,000 customers and orders, ~300,000
    /// order lines and `items` stock rows per warehouse.
    pub warehouses: u32,
    /// Rows of ITEM (and of STOCK per warehouse).
    pub items: u32,
    /// Replace an existing file.
    pub force: bool,
}

impl SampleOptions {
    /// One warehouse and 10,000 items: every table, about 370,000 rows,
    /// made in seconds.
    pub fn new(database: impl Into<PathBuf>) -> SampleOptions {
        SampleOptions {
            database: database.into(),
            warehouses: 1,
            items: 10_000,
            force: false,
        }
    }
}

/// A sample database, made or found.
#[derive(Debug, Clone)]
pub struct Sample {
    pub report: SampleReport,
    /// The file was already this sample (every table, as many rows as
    /// these options make), so it was kept as it is.
    pub reused: bool,
}

/// Creates the sample database with `client` (it must have an engine: a
/// plain path is created by the embedded engine), calling `each_table`
/// as each table is filled. A file that is already the sample these
/// options make is kept (`reused`), so that examples run twice, and after
/// the README's Quick start made it, still work; any other file is
/// refused unless `force`.
pub fn create_sample(
    client: &Arc<Client>,
    options: &SampleOptions,
    each_table: impl FnMut(&fbunload_gen::TableReport),
) -> Result<Sample, SampleError> {
    let gen = GenOptions {
        warehouses: options.warehouses,
        items: options.items,
        tables: Table::ALL.to_vec(),
        force: options.force,
        application: true,
        ..GenOptions::new(&options.database)
    };
    if !options.force && options.database.exists() {
        if let Some(report) = same_sample(client, &gen) {
            return Ok(Sample {
                report,
                reused: true,
            });
        }
    }
    let report = fbunload_gen::generate_with(client, &gen, each_table)?;
    Ok(Sample {
        report,
        reused: false,
    })
}

/// Changes about `percent` % of the sample's rows, as a day of work would,
/// for trying incremental runs (`--since`) with fbunload alone: updates
/// STOCK and CUSTOMER rows, deletes ORDER_LINE rows, and inserts ITEM
/// and ARRAY_TYPES rows (copies of chosen ones under new keys, arrays
/// included; of ARRAY_TYPES' three rows, the first always, so that a
/// change set holds arrays). Rows are chosen at random, so every call
/// changes others. Returns a line per statement.
pub fn change_sample(
    client: &Arc<Client>,
    database: &Path,
    percent: u32,
) -> Result<Vec<String>, SampleError> {
    let fb = |context: &str| {
        let context = context.to_string();
        move |source| SampleError::Firebird { context, source }
    };
    let attachment = Attachment::connect(client, &fbunload_gen::connect_options(database))
        .map_err(fb(&format!("attaching {}", database.display())))?;
    let tr = attachment
        .start_transaction(TransactionMode::ReadWrite)
        .map_err(fb("starting a transaction"))?;
    let chosen = format!("RAND() * 100 < {percent}");
    let statements = [
        (
            "STOCK: rows updated",
            format!(
                "UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1, S_YTD = S_YTD + 1 WHERE {chosen}"
            ),
        ),
        (
            "CUSTOMER: rows updated",
            format!("UPDATE CUSTOMER SET C_BALANCE = C_BALANCE - 1 WHERE {chosen}"),
        ),
        (
            "ORDER_LINE: rows deleted",
            format!("DELETE FROM ORDER_LINE WHERE {chosen}"),
        ),
        (
            "ITEM: rows inserted",
            format!(
                "INSERT INTO ITEM (I_ID, I_IM_ID, I_NAME, I_PRICE, I_DATA) \
                 SELECT I_ID + (SELECT MAX(I_ID) FROM ITEM), I_IM_ID, I_NAME, I_PRICE, I_DATA \
                 FROM ITEM WHERE {chosen}"
            ),
        ),
        (
            "ARRAY_TYPES: rows inserted",
            format!(
                "INSERT INTO ARRAY_TYPES SELECT ID + (SELECT MAX(ID) FROM ARRAY_TYPES), {} \
                 FROM ARRAY_TYPES WHERE {chosen} OR ID = 1",
                fbunload_gen::arrays::ARRAY_TYPES_COLUMNS.join(", ")
            ),
        ),
    ];
    let mut done = Vec::new();
    for (what, sql) in statements {
        tr.execute(&sql).map_err(fb(what))?;
        let first = if what.starts_with("ARRAY_TYPES") {
            ", and the first row"
        } else {
            ""
        };
        done.push(format!("{what}: about {percent} %{first}"));
    }
    tr.commit().map_err(fb("committing the changes"))?;
    Ok(done)
}

/// The report of the sample at `gen.database` when it holds every table
/// with the rows `gen` makes, and the application's objects; `None` for
/// any other file (or one that does not open, or a sample made before
/// the sample had those objects).
fn same_sample(client: &Arc<Client>, gen: &GenOptions) -> Option<SampleReport> {
    let started = std::time::Instant::now();
    let database = std::path::absolute(&gen.database).ok()?;
    let attachment = Attachment::connect(client, &fbunload_gen::connect_options(&database)).ok()?;
    let tr = attachment
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .ok()?;
    for (catalog, column, name) in fbunload_gen::application::OBJECTS {
        let mut stmt = tr
            .prepare(&format!(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM {catalog} WHERE {column} = '{name}'"
            ))
            .ok()?;
        stmt.execute().ok()?;
        stmt.fetch().ok()?.then_some(())?;
        let found = i64::from_ne_bytes(stmt.row().value(0)?.try_into().ok()?);
        (found == 1).then_some(())?;
    }
    let mut tables = Vec::new();
    for &table in &gen.tables {
        let name = table.db_name().replace('"', "\"\"");
        let mut stmt = tr
            .prepare(&format!("SELECT CAST(COUNT(*) AS BIGINT) FROM \"{name}\""))
            .ok()?;
        stmt.execute().ok()?;
        stmt.fetch().ok()?.then_some(())?;
        let rows = i64::from_ne_bytes(stmt.row().value(0)?.try_into().ok()?);
        if rows as u64 != gen.rows(table) {
            return None;
        }
        tables.push(fbunload_gen::TableReport {
            table,
            rows: rows as u64,
            seconds: 0.0,
        });
    }
    Some(SampleReport {
        database,
        tables,
        many: None,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The command that unloads the sample at `database` into `out` (the
/// embedded engine needs no user or password).
pub fn sample_command(database: &Path, out: &str) -> String {
    format!("fbunload -d {} -o {out}", database.display())
}
