//! A sample database to try fbunload on, made by the installed program
//! itself: a newcomer with `pip install '.[embedded]'` has the
//! engine but no database, and the README's examples need one.
//!
//! It is the generator the tests use (`fbunload-gen`): TPC-C-like tables
//! whose size scales with the warehouses, and ALL_TYPES, `Mixed Case "Quoted"` and
//! EMPTY_TABLE with every Firebird type and its edge values, so what a user
//! tries first is what the tests check.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fbunload_client::Client;
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

/// Creates the sample database with `client` (it must have an engine: a
/// plain path is created by the embedded engine), calling `each_table`
/// as each table is filled.
pub fn create_sample(
    client: &Arc<Client>,
    options: &SampleOptions,
    each_table: impl FnMut(&fbunload_gen::TableReport),
) -> Result<SampleReport, SampleError> {
    let gen = GenOptions {
        warehouses: options.warehouses,
        items: options.items,
        tables: Table::ALL.to_vec(),
        force: options.force,
        ..GenOptions::new(&options.database)
    };
    fbunload_gen::generate_with(client, &gen, each_table)
}

/// The command that unloads the sample at `database` into `out` (the
/// embedded engine needs no user or password).
pub fn sample_command(database: &Path, out: &str) -> String {
    format!("fbunload -d {} -o {out}", database.display())
}
