//! The catalog and the planner: which tables to unload, with which
//! columns, and how to cut each table into units of work.
//!
//! A [`Plan`] is a plain value — tables, units, snapshot number — that can be
//! printed (`--plan`), tested without a database, and handed to the
//! executor. Reading the catalog ([`catalog`]) is separate from cutting it
//! into units ([`planner`]) so the cutting rules are unit-tested on made-up
//! tables. [`schema`] reads and writes the DDL of the unloaded tables
//! (`schema.sql`).

pub mod catalog;
mod identifier;
pub mod planner;
pub mod schema;
pub mod selection;

pub use catalog::{read_catalog, CatalogError, Column, Table, TableFilter};
pub use identifier::{printable, quote_identifier};
pub use planner::{counted, Plan, PlanOptions, TablePlan, Unit};
pub use schema::{read_schema, Schema};
pub use selection::{SelectionError, TableChoice};
