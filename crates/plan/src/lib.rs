//! The catalog and the planner: which tables to unload, with which
//! columns, and how to cut each table into units of work.
//!
//! A [`Plan`] is a plain value — tables, units, snapshot number — that can be
//! printed (`--plan`), tested without a database, and handed to the
//! executor. Reading the catalog ([`catalog`]) is separate from cutting it
//! into units ([`planner`]) so the cutting rules are unit-tested on made-up
//! tables. Views and queries join a plan after its tables; [`query`]
//! checks `--query` SQL and finds where a split query's units put their
//! DB_KEY range. [`schema`] reads and writes the DDL of the unloaded
//! tables (`schema.sql`).

pub mod catalog;
pub mod estimate;
mod identifier;
pub mod incremental;
pub mod inventory;
pub mod planner;
pub mod query;
pub mod routines;
pub mod schema;
pub mod selection;
pub mod sequences;
mod sql_text;

pub use catalog::{
    read_catalog, read_views, same_pattern, CatalogError, Column, Table, TableFilter, View,
};
pub use estimate::{Basis, Estimate};
pub use identifier::{printable, quote_identifier, sql_name};
pub use incremental::{
    DatabaseNow, DbKeyLayout, Incremental, PreviousTable, Role, RowPlaces, Since, TableMode,
    DB_KEY_COLUMN,
};
pub use planner::{
    counted, ChangesByKey, CountBuckets, Kind, Plan, PlanOptions, Read, ResumeCheck, TablePlan,
    Unit, BLOB_UNIT_BYTES, COUNT_BUCKETS, COUNT_BUCKETS_BY_KEY, KEYS_PER_FETCH,
    UNCHANGED_COUNTS_METADATA,
};
pub use query::{QueryError, QuerySpec};
pub use schema::{read_schema, Schema};
pub use selection::{SelectionError, TableChoice};
pub use sql_text::{for_the_engine, parameter_markers, token_ranges, without_comments};
