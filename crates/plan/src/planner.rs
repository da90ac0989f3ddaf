//! Cutting tables into units of work.
//!
//! A table's rows live on data pages listed by its pointer pages (PPs); a
//! PP has `dp_per_pp` slots, each naming one data page. `MAKE_DBKEY(rel, 0,
//! dp, pp)` is the first record number slot `dp` of PP `pp` can hold, so
//! `RDB$DB_KEY >= MAKE_DBKEY(r,0,dp1,pp1) AND RDB$DB_KEY < MAKE_DBKEY(r,0,dp2,pp2)`
//! reads exactly the rows on those slots, and Firebird 5 turns that into a
//! scan of those pages only. We number slots across the whole table
//! (`pp * dp_per_pp + dp`) and cut that line into units of `unit_pages`
//! slots, so a unit can be a piece of a PP (to keep every worker busy to the
//! end) or span several.
//!
//! The automatic unit size aims at about [`UNITS_PER_WORKER`] units per
//! worker over the whole run: enough that the last units, handed out when
//! the other workers are done, are small; never below
//! [`MIN_UNIT_PAGES`] pages (a unit costs a prepared statement), never above
//! one PP. The first unit of a table has no lower bound and the last no
//! upper bound, so rows on pages allocated after the catalog was read are
//! not lost.
//!
//! However units are cut, a table's units are contiguous DB_KEY ranges
//! written in order, so the output is the same bytes as one full scan: that
//! is what makes it byte-identical for any `--parallel` and unit size.
//! Units are handed out biggest table first, so a run that mixes one huge
//! table with many small ones ends with small units that fill the gaps.
//!
//! Views and queries ([`Read`]) join the plan as entries of their own: one
//! unit each, or for a query split by its driving table (see
//! [`crate::query`]) that table's DB_KEY ranges, cut the same way. Their
//! unit size does not depend on the number of workers (one pointer page,
//! or `--unit-pages`): a join's rows come in the order the engine's plan
//! gives them, so only the same units make the same file for any
//! `--parallel`.

use std::fmt;

use fbunload_client::{sql_type, ArrayShape, ColumnDesc};
use fbunload_decode::text::{CHARSET_NONE, CHARSET_OCTETS, CHARSET_UTF8};
use fbunload_decode::TextDecoder;

use crate::catalog::{blr, Column, Table};
use crate::identifier::quote_identifier;
use crate::incremental::{Role, DB_KEY_COLUMN};
use crate::query::DrivingTable;
use crate::sql_text::for_the_engine;

/// Units per worker the automatic size aims at.
pub const UNITS_PER_WORKER: u64 = 8;
/// The smallest automatic unit: 64 pages (512 KiB at 8 KiB pages).
pub const MIN_UNIT_PAGES: u64 = 64;

/// Data pages one pointer page can list, for a page size (Firebird's
/// `Ods::dataPagesPerPP`: a 32-bit page number and 8 flag bits per slot
/// after a 32-byte header, rounded down to whole extents of 8 pages).
pub fn data_pages_per_pointer_page(page_size: u32) -> u64 {
    let slots = (page_size.saturating_sub(32) as u64) * 8 / (32 + 8);
    slots & !7
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Data pages per unit; `None` for the automatic size.
    pub unit_pages: Option<u64>,
    /// Workers the automatic size plans for.
    pub workers: usize,
    /// The database page size.
    pub page_size: u32,
    /// Whether the server has `MAKE_DBKEY` (Firebird 4+); without it every
    /// table is one unit.
    pub split_tables: bool,
    /// Whether the server removes CHAR padding before rows go on the wire
    /// (see `select_list`): for attachments through a server.
    pub trim_char_on_server: bool,
    /// The character set user SQL's non-ASCII string literals are sent in
    /// (see [`crate::sql_text::for_the_engine`]): that of `CHARACTER SET
    /// NONE` text (`--charset`), UTF8 by default.
    pub literals: TextDecoder,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            unit_pages: None,
            workers: 1,
            page_size: 8192,
            split_tables: true,
            trim_char_on_server: false,
            literals: TextDecoder::UTF8,
        }
    }
}

impl PlanOptions {
    /// The unit size for a catalog: explicit, or automatic (module docs).
    pub fn unit_pages_for(&self, catalog: &[Table]) -> u64 {
        let per_pp = data_pages_per_pointer_page(self.page_size);
        if let Some(pages) = self.unit_pages {
            return pages.max(1);
        }
        let total: u64 = catalog
            .iter()
            .map(|t| t.pointer_pages as u64 * per_pp)
            .sum();
        let target = total / (self.workers.max(1) as u64 * UNITS_PER_WORKER);
        target.clamp(MIN_UNIT_PAGES.min(per_pp), per_pp)
    }
}

/// What an entry of a plan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    Table,
    View,
    Query,
}

impl Kind {
    /// `table`, `view`, `query`: as the manifest and `--plan` say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::View => "view",
            Kind::Query => "query",
        }
    }
}

/// A view or a query to add to a plan, as the server described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub name: String,
    pub kind: Kind,
    /// The SQL that reads it whole: a query as given, `SELECT ... FROM`
    /// a view.
    pub sql: String,
    pub columns: Vec<String>,
    /// Each column's type as the server described it.
    pub declared_types: Vec<String>,
    /// The type the server must cast each column to, if any.
    pub casts: Vec<Option<String>>,
    /// A split query's driving table and its catalog entry.
    pub driving: Option<(DrivingTable, Table)>,
}

/// One table's (or view's, or query's) part of a plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TablePlan {
    pub name: String,
    pub kind: Kind,
    /// A query's SQL, as given.
    pub query: Option<String>,
    /// The table whose DB_KEY ranges split a query.
    pub split_by: Option<String>,
    /// The table's, or a split query's driving table's.
    pub relation_id: u16,
    /// Output column names, in catalog order.
    pub columns: Vec<String>,
    /// A table's computed columns, which its read leaves out (see
    /// [`crate::catalog`]); empty for views and queries, whose columns are
    /// all read.
    pub computed: Vec<String>,
    /// Each column's type as declared (`NUMERIC(9,3)`), whatever the query
    /// casts it to on the way.
    pub declared_types: Vec<String>,
    /// How a slice reads each ARRAY column (`None` for other columns);
    /// empty for views and queries.
    pub arrays: Vec<Option<ArrayShape>>,
    pub pointer_pages: u32,
    pub unit_count: usize,
    /// The rows to read (`--where`), ANDed to every unit's range.
    pub condition: Option<String>,
    /// Its part of an incremental run (`--since`, `--keep-keys`).
    pub role: Role,
    /// Where it keeps its primary key (`--since`, `--keep-keys`): the
    /// key's columns, as indices into `columns`; then its read returns
    /// one more column after them, the rows' DB_KEY ([`DB_KEY_COLUMN`]).
    /// Empty for a table that keeps none.
    #[serde(default)]
    pub key_columns: Vec<usize>,
    /// For an incremental run's count entry ([`Role::UnchangedCount`]):
    /// in how many ranges of its pages each unit's rows are counted apart
    /// (see [`TablePlan::count_buckets`]); 0 for every other entry.
    #[serde(default)]
    pub count_buckets: u64,
    /// For a table read for its changes ([`Role::Upserts`]): how each of
    /// its units finds them and counts its unchanged rows in one pass over
    /// its pages; `None` for every other entry.
    #[serde(default)]
    pub changes_by_key: Option<ChangesByKey>,
    select: String,
    /// The character set the condition's literals are sent in.
    #[serde(with = "literals_by_name")]
    literals: TextDecoder,
    dp_per_pp: u64,
    /// The data-page slots its units cover; 0 for a table read whole.
    slots: u64,
    /// Where a split query's units put their range.
    driving: Option<DrivingTable>,
    /// Casts of a view's or query's columns, made around its SQL.
    casts: Vec<Option<String>>,
    /// For each column the select reads as bytes (see [`read_as_bytes`]),
    /// the character set to decode them in; empty for views and queries.
    pub byte_charsets: Vec<Option<u8>>,
    /// Its rows and bytes, estimated for `--plan` (see
    /// [`crate::estimate`]); `None` until estimated, and for views and
    /// queries.
    #[serde(default)]
    pub estimate: Option<crate::estimate::Estimate>,
}

impl TablePlan {
    /// The query that reads the whole table, view or query.
    pub fn select_sql(&self) -> String {
        if self.count_buckets > 0 {
            return self.buckets_sql(&Unit {
                table: 0,
                seq: 0,
                first_slot: 0,
                end_slot: None,
            });
        }
        match self.kind {
            Kind::Table => self.with_where(self.select.clone(), Vec::new()),
            Kind::View | Kind::Query => self.with_casts(self.select.clone()),
        }
    }

    /// A view's or query's SQL inside a SELECT that makes its casts, if it
    /// needs any; columns are named by position (`C1`...), since a query's
    /// may have none or share one.
    fn with_casts(&self, sql: String) -> String {
        if self.casts.iter().all(Option::is_none) {
            return sql;
        }
        let names: Vec<String> = (1..=self.casts.len()).map(|i| format!("C{i}")).collect();
        let list: Vec<String> = self
            .casts
            .iter()
            .zip(&names)
            .map(|(cast, name)| match cast {
                Some(target) => format!("CAST({name} AS {target})"),
                None => name.clone(),
            })
            .collect();
        format!(
            "SELECT {} FROM (\n{sql}\n) AS Q ({})",
            list.join(", "),
            names.join(", ")
        )
    }

    /// The data-page slots of its pointer pages; 0 for a table the plan
    /// reads whole (one pointer page, or a server without `MAKE_DBKEY`).
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Data-page slots per pointer page, at its database's page size.
    pub fn dp_per_pp(&self) -> u64 {
        self.dp_per_pp
    }

    /// The table cut into at most `count` units of about equal slots, in
    /// DB_KEY order, whatever the plan's unit size: for readers that each
    /// take one share (a Dask partition). `table` is the table's index in
    /// its plan. The shares cover the first `used_slots` slots (those that
    /// hold rows: the last pointer page is seldom full), the last one
    /// everything after. A table read whole stays one unit.
    pub fn units_in_shares(&self, table: usize, count: usize, used_slots: u64) -> Vec<Unit> {
        let used = used_slots.clamp(self.slots.min(1), self.slots);
        let per_unit = used.div_ceil(count.max(1) as u64).max(1);
        split(table, used, per_unit)
    }

    /// A query whose one BIGINT says at how many of `slots` or after them
    /// a row lies (each an `EXISTS`, which Firebird 5 answers reading
    /// from that slot to the first row there): in the table, or in a
    /// split query's driving table. See
    /// [`crate::estimate::used_slots_end`].
    pub fn rows_from_sql(&self, slots: &[u64]) -> String {
        let table = quote_identifier(self.split_by.as_deref().unwrap_or(&self.name));
        let each: Vec<String> = slots
            .iter()
            .map(|&slot| {
                format!(
                    "IIF(EXISTS(SELECT 1 FROM {table} WHERE RDB$DB_KEY >= {}), 1, 0)",
                    self.db_key(slot)
                )
            })
            .collect();
        format!(
            "SELECT CAST({} AS BIGINT) FROM RDB$DATABASE",
            each.join("\n + ")
        )
    }

    pub(crate) fn db_key(&self, slot: u64) -> String {
        format!(
            "MAKE_DBKEY({}, 0, {}, {})",
            self.relation_id,
            slot % self.dp_per_pp,
            slot / self.dp_per_pp
        )
    }

    /// The conditions on the DB_KEY that keep the rows of slots `first` to
    /// `end`.
    fn slot_range(&self, first: u64, end: Option<u64>) -> Vec<String> {
        let mut range = Vec::new();
        if first > 0 {
            range.push(format!("RDB$DB_KEY >= {}", self.db_key(first)));
        }
        if let Some(end) = end {
            range.push(format!("RDB$DB_KEY < {}", self.db_key(end)));
        }
        range
    }

    /// The ranges of slots (first, end) a count entry counts a unit's rows
    /// in, each apart (see [`CountBuckets`]).
    pub fn count_buckets(&self, unit: &Unit) -> Vec<(u64, Option<u64>)> {
        self.bucket_layout().of(unit)
    }

    /// How the entry's units are cut into count ranges, for those who
    /// keep its units but not the entry.
    pub fn bucket_layout(&self) -> CountBuckets {
        CountBuckets {
            buckets: self.count_buckets,
            slots: self.slots,
        }
    }

    /// A count entry's query of `unit`: one row, a count per range of
    /// [`TablePlan::count_buckets`] (each range read by its own DB_KEY
    /// range, so the pages read are the unit's, once).
    fn buckets_sql(&self, unit: &Unit) -> String {
        let counts: Vec<String> = self
            .count_buckets(unit)
            .into_iter()
            .map(|(first, end)| {
                if end == Some(first) {
                    // A count all the same (a column of the same type).
                    return "(SELECT COUNT(*) FROM RDB$DATABASE WHERE 1 = 0)".to_string();
                }
                let range = self.slot_range(first, end);
                format!("({})", self.with_where(self.select.clone(), range))
            })
            .collect();
        format!("SELECT {} FROM RDB$DATABASE", counts.join(",\n"))
    }

    /// `SELECT COUNT(*)` of the rows the table's queries read; of a
    /// query's result, with its columns named by position (a derived
    /// table's must have distinct names).
    pub fn count_sql(&self) -> String {
        if self.kind == Kind::Query {
            let names: Vec<String> = (1..=self.columns.len()).map(|i| format!("C{i}")).collect();
            return format!(
                "SELECT COUNT(*) FROM (\n{}\n) AS Q ({})",
                self.select,
                names.join(", ")
            );
        }
        let count = format!("SELECT COUNT(*) FROM {}", quote_identifier(&self.name));
        self.with_where(count, Vec::new())
    }

    /// The query that reads `unit` of this table, view or query.
    pub fn unit_sql(&self, unit: &Unit) -> String {
        if self.count_buckets > 0 {
            return self.buckets_sql(unit);
        }
        let range = self.slot_range(unit.first_slot, unit.end_slot);
        match (&self.driving, self.kind) {
            (_, Kind::Table) => self.with_where(self.select.clone(), range),
            (Some(driving), _) if !range.is_empty() => {
                let table = self.split_by.as_deref().unwrap_or_default();
                let rows = format!(
                    "SELECT * FROM {} WHERE {}",
                    quote_identifier(table),
                    range.join(" AND ")
                );
                self.with_casts(driving.with_rows(&rows))
            }
            _ => self.select_sql(),
        }
    }

    /// A split query read over none of its driving table's rows, for a
    /// query that is split; `None` for anything else. Its units add up to
    /// the query only if every result row comes from a row of that table,
    /// so this must return no row. It does when the query is an aggregate
    /// after all, which its text does not show: an aggregate inside a
    /// subquery whose argument is only the outer query's columns
    /// (`(SELECT MAX(o.ID) FROM RDB$DATABASE)`) aggregates the whole query.
    pub fn without_driving_rows_sql(&self) -> Option<String> {
        let driving = self.driving.as_ref()?;
        let table = self.split_by.as_deref()?;
        // No DB_KEY is below the first one: the range holds no row, and
        // the engine reads no page for it.
        let rows = format!(
            "SELECT * FROM {} WHERE RDB$DB_KEY < {}",
            quote_identifier(table),
            self.db_key(0)
        );
        Some(self.with_casts(driving.with_rows(&rows)))
    }

    /// `query` with its WHERE: the table's condition, its comments
    /// blanked and on lines of its own (see [`crate::selection`]), and
    /// the unit's range.
    fn with_where(&self, mut query: String, range: Vec<String>) -> String {
        let mut terms = Vec::with_capacity(range.len() + 1);
        if let Some(condition) = &self.condition {
            terms.push(format!(
                "(\n{}\n)",
                for_the_engine(condition, &self.literals)
            ));
        }
        terms.extend(range);
        if !terms.is_empty() {
            query.push_str(" WHERE ");
            query.push_str(&terms.join(" AND "));
        }
        query
    }
}

/// How a unit of a table read for its changes is read in one pass over
/// its pages instead of two (module docs of [`crate::incremental`],
/// "Deletes"): a first query counts each range's unchanged rows, as the
/// count entry would, and lists the DB_KEYs of its changed rows on the
/// same pass ([`TablePlan::changes_scan_sql`]); then the changed rows are
/// fetched by those keys ([`TablePlan::rows_at_sql`]), or, in a range
/// where many changed, read by a scan of the range for them. A scan of
/// every page was about two fifths of a `--since` run each (issue 53).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangesByKey {
    /// The table's count entry ([`Role::UnchangedCount`]): these counts
    /// are its, and it has no units of its own.
    pub counts: usize,
    /// The condition an unchanged row meets.
    unchanged: String,
    /// The table's columns and DB_KEY, as its select reads them, each
    /// qualified by the table's name (`SELECT "T"."A" AS "A", ...`): the
    /// fetch by key joins a second source whose names could be a
    /// column's.
    select: String,
}

/// At most this many DB_KEYs are fetched by one query: its keys are
/// counted out by a recursive CTE, which Firebird stops at 1,024 levels.
pub const KEYS_PER_FETCH: usize = 1000;

/// The schema metadata key of the empty batch that carries a unit's
/// unchanged counts from its reader to the destination, one number per
/// range of [`TablePlan::count_buckets`], space separated: a unit read
/// by [`ChangesByKey`] has no count entry unit to carry them.
pub const UNCHANGED_COUNTS_METADATA: &str = "fbunload.unchanged_counts";

impl TablePlan {
    /// For a table read by [`ChangesByKey`]: the query that scans `ranges`
    /// (first and end slot each, as [`TablePlan::count_buckets`] cuts a
    /// unit) once and returns one row, for each range a text: its
    /// unchanged rows, then the DB_KEY of each of its changed rows as 16
    /// hex digits, in the order the scan met them, all space separated.
    pub fn changes_scan_sql(&self, ranges: &[(u64, Option<u64>)]) -> Option<String> {
        let by_key = self.changes_by_key.as_ref()?;
        let changed = self.condition.as_deref()?;
        let table = quote_identifier(&self.name);
        let texts: Vec<String> = ranges
            .iter()
            .map(|&(first, end)| {
                if end == Some(first) {
                    return "(SELECT '0' FROM RDB$DATABASE)".to_string();
                }
                let scan = format!(
                    "SELECT COUNT(IIF(({}), 1, NULL)) || COALESCE(' ' || LIST(IIF(({}), \
                     HEX_ENCODE(CAST(RDB$DB_KEY AS VARCHAR(8) CHARACTER SET OCTETS)), NULL), \
                     ' '), '') FROM {table}",
                    by_key.unchanged, changed
                );
                let range = self.slot_range(first, end);
                let scan = if range.is_empty() {
                    scan
                } else {
                    format!("{scan} WHERE {}", range.join(" AND "))
                };
                format!("({scan})")
            })
            .collect();
        Some(format!("SELECT {} FROM RDB$DATABASE", texts.join(",\n")))
    }

    /// For a table read by [`ChangesByKey`]: the query that returns its
    /// rows at `keys` (each a DB_KEY's 16 hex digits, at most
    /// [`KEYS_PER_FETCH`] of them), in their order, as its units' query
    /// returns them.
    pub fn rows_at_sql(&self, keys: &[&str]) -> Option<String> {
        let by_key = self.changes_by_key.as_ref()?;
        if keys.is_empty() || keys.len() > KEYS_PER_FETCH || keys.iter().any(|k| !is_hex_key(k)) {
            return None;
        }
        // Any name but the table's.
        let list = if self.name == "FBUNLOAD_KEYS" {
            "FBUNLOAD_KEYS_"
        } else {
            "FBUNLOAD_KEYS"
        };
        Some(format!(
            "WITH RECURSIVE {list} (I) AS (SELECT 0 FROM RDB$DATABASE UNION ALL \
             SELECT I + 1 FROM {list} WHERE I < {last}) \
             {select} FROM {list} JOIN {table} ON {table}.{DB_KEY_COLUMN} = \
             HEX_DECODE(SUBSTRING('{hex}' FROM {list}.I * 16 + 1 FOR 16))",
            last = keys.len() - 1,
            select = by_key.select,
            table = quote_identifier(&self.name),
            hex = keys.concat(),
        ))
    }
}

fn is_hex_key(key: &str) -> bool {
    key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

/// In how many ranges of its pages an incremental run counts each unit's
/// unchanged rows apart: rows deleted all over a table then cost a read of
/// the keys in the ranges that lost rows, not in whole units. (128 is
/// refused: a statement has at most 256 contexts.)
pub const COUNT_BUCKETS: u64 = 64;

/// As [`COUNT_BUCKETS`], for a table whose units count as they list their
/// changed rows ([`ChangesByKey`]): each range is a subquery of the unit's
/// one query, and 64 of them cost more to prepare and run than the scan
/// of the unit's pages itself (issue 53: docs/PERFORMANCE.md, "`--since`
/// cost, one scan"). Rows deleted all over a table then cost a read of
/// the keys in a sixteenth of a unit for each range that lost rows.
pub const COUNT_BUCKETS_BY_KEY: u64 = 16;

/// BLOB bytes a unit of a table whose rows are mostly BLOBs aims at
/// ([`Plan::split_by_blob_bytes`]): about a second of one worker's reading,
/// and 32 units for 2 GB, so two or sixteen workers share them evenly.
pub const BLOB_UNIT_BYTES: u64 = 64 << 20;

/// A range of data-page slots of one table: the unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unit {
    /// Index into [`Plan::tables`].
    pub table: usize,
    /// Position within the table; output is assembled in this order.
    pub seq: usize,
    /// First data-page slot, counted across pointer pages.
    pub first_slot: u64,
    /// Exclusive; `None` for "to the end of the table".
    pub end_slot: Option<u64>,
}

/// The ranges of slots (first, end) a count entry counts each unit's rows
/// in, each apart: `buckets` ranges of as many pages, the last to the
/// unit's end; a range past the unit's end is empty (first = end). So that
/// a unit that lost rows has its keys read only where it lost them,
/// without reading its pages more. Two numbers, where the ranges of a
/// unit are 64 pairs: a --since run keeps them for every unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountBuckets {
    buckets: u64,
    /// The table's data-page slots.
    slots: u64,
}

impl CountBuckets {
    /// The ranges of `unit`.
    pub fn of(&self, unit: &Unit) -> Vec<(u64, Option<u64>)> {
        let n = self.buckets.max(1);
        let first = unit.first_slot;
        let end = unit.end_slot.unwrap_or(self.slots).max(first + 1);
        let step = (end - first).div_ceil(n);
        (0..n)
            .map(|i| {
                let lo = (first + i * step).min(end);
                if i + 1 == n {
                    (lo, unit.end_slot)
                } else {
                    (lo, Some((lo + step).min(end)))
                }
            })
            .collect()
    }
}

/// Units of table `of` a stopped run finished, as (first, end) slots, to
/// count with `select` ([`Plan::with_resume_checks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeCheck {
    pub of: usize,
    pub finished: Vec<(u64, Option<u64>)>,
    pub select: String,
}

/// What to unload and in which pieces.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub tables: Vec<TablePlan>,
    /// In dispatch order.
    pub units: Vec<Unit>,
    /// Data pages per unit (the last unit of a table may be shorter).
    pub unit_pages: u64,
    /// The database's GUID, read for an incremental run.
    pub database_guid: Option<String>,
    /// The database file's id, read for an incremental run.
    #[serde(default)]
    pub database_file_id: Option<String>,
    /// Each table's relation id and format number (`RDB$FORMAT`, which
    /// every change of its record layout moves), read for an incremental
    /// run.
    #[serde(default)]
    pub table_formats: std::collections::BTreeMap<String, (u16, u32)>,
    /// Where rows lie, read for a run that keeps keys.
    pub row_places: Option<crate::incremental::RowPlaces>,
}

impl Plan {
    pub fn new(catalog: &[Table], options: PlanOptions) -> Plan {
        let dp_per_pp = data_pages_per_pointer_page(options.page_size).max(8);
        let unit_pages = options.unit_pages_for(catalog);
        let mut tables = Vec::with_capacity(catalog.len());
        let mut per_table_units = Vec::with_capacity(catalog.len());
        for (index, table) in catalog.iter().enumerate() {
            // A table of one pointer page (at most a few MB at usual page
            // sizes) stays whole: splitting it would mostly add queries over
            // empty slots.
            let slots = if options.split_tables && table.pointer_pages > 1 {
                table.pointer_pages as u64 * dp_per_pp
            } else {
                0
            };
            let units = split(index, slots, unit_pages);
            tables.push(TablePlan {
                name: table.name.clone(),
                relation_id: table.relation_id,
                columns: table.columns.iter().map(|c| c.name.clone()).collect(),
                computed: table.computed.clone(),
                declared_types: table.columns.iter().map(Column::declared_type).collect(),
                arrays: table
                    .columns
                    .iter()
                    .map(|c| c.array_shape(&table.name))
                    .collect(),
                kind: Kind::Table,
                query: None,
                split_by: None,
                pointer_pages: table.pointer_pages,
                unit_count: units.len(),
                condition: None,
                role: Role::Whole,
                key_columns: Vec::new(),
                count_buckets: 0,
                changes_by_key: None,
                select: select_list(table, options.trim_char_on_server),
                literals: options.literals,
                dp_per_pp,
                slots,
                driving: None,
                casts: Vec::new(),
                byte_charsets: byte_charsets(&table.columns),
                estimate: None,
            });
            per_table_units.push(units);
        }
        // Biggest first; ties keep catalog (name) order.
        per_table_units.sort_by_key(|units| std::cmp::Reverse(units.len()));
        Plan {
            tables,
            units: per_table_units.into_iter().flatten().collect(),
            unit_pages,
            database_guid: None,
            database_file_id: None,
            table_formats: Default::default(),
            row_places: None,
        }
    }
}

impl Plan {
    /// Adds views and queries after the tables, and hands out every unit
    /// biggest entry first again. A split query's units are cut from its
    /// driving table's slots, one pointer page each unless
    /// `options.unit_pages` says otherwise (module docs).
    pub fn with_reads(mut self, reads: Vec<Read>, options: PlanOptions) -> Plan {
        let dp_per_pp = data_pages_per_pointer_page(options.page_size).max(8);
        let mut per_entry = self.units_by_entry();
        for read in reads {
            let index = self.tables.len();
            let driving_table = read.driving.as_ref().map(|(_, table)| table);
            let slots = match driving_table {
                Some(table) if options.split_tables && table.pointer_pages > 1 => {
                    table.pointer_pages as u64 * dp_per_pp
                }
                _ => 0,
            };
            let unit_pages = options.unit_pages.unwrap_or(dp_per_pp).max(1);
            if slots > 0 {
                // "Up to" in the printed plan covers the split queries too.
                self.unit_pages = self.unit_pages.max(unit_pages);
            }
            let units = split(index, slots, unit_pages);
            self.tables.push(TablePlan {
                kind: read.kind,
                query: (read.kind == Kind::Query).then(|| read.sql.clone()),
                split_by: driving_table.map(|t| t.name.clone()),
                relation_id: driving_table.map_or(0, |t| t.relation_id),
                pointer_pages: driving_table.map_or(0, |t| t.pointer_pages),
                columns: read.columns,
                computed: Vec::new(),
                declared_types: read.declared_types,
                arrays: Vec::new(),
                unit_count: units.len(),
                condition: None,
                role: Role::Whole,
                key_columns: Vec::new(),
                count_buckets: 0,
                changes_by_key: None,
                // The query as Firebird will read it; `query` keeps it as
                // given, for the plan and the manifest.
                select: for_the_engine(&read.sql, &options.literals),
                literals: options.literals,
                dp_per_pp,
                slots,
                driving: read
                    .driving
                    .map(|(driving, _)| driving.for_the_engine(&options.literals)),
                casts: read.casts,
                byte_charsets: Vec::new(),
                estimate: None,
                name: read.name,
            });
            per_entry.push(units);
        }
        per_entry.sort_by_key(|units| std::cmp::Reverse(units.len()));
        self.units = per_entry.into_iter().flatten().collect();
        self
    }

    /// Makes each table `(index, key)` keep its primary key (`key`: the
    /// table with only those columns): it reads its rows' DB_KEY after its
    /// columns, for the destination to keep with the keys (see
    /// [`Role`]). A table read for its changes also gets its two helper
    /// entries, whose rows meet `unchanged`: a count over each of its
    /// units, and its unchanged keys, read only for the units the
    /// destination asks for. With its entry in `catalog` (at its index)
    /// the count has no units of its own: each of the table's units counts
    /// as it lists its changed rows ([`ChangesByKey`]).
    pub fn with_kept_keys(
        mut self,
        keys: Vec<(usize, Table)>,
        catalog: &[Table],
        unchanged: &str,
        options: PlanOptions,
    ) -> Plan {
        let mut per_entry = self.units_by_entry();
        for (of, key) in keys {
            let entry = &mut self.tables[of];
            entry.key_columns = key
                .columns
                .iter()
                .filter_map(|c| entry.columns.iter().position(|name| *name == c.name))
                .collect();
            entry.select = with_db_key(&entry.select, &entry.name);
            if entry.role != Role::Upserts {
                continue;
            }
            let units: Vec<Unit> = per_entry[of].clone();
            let mut count = self.tables[of].clone();
            let table = catalog.get(of).filter(|t| t.name == count.name);
            // Only a table split by DB_KEY ranges (where they are range
            // scans) counts its units' ranges apart.
            count.count_buckets = match (count.slots, table) {
                (0, _) => 0,
                (_, Some(_)) => COUNT_BUCKETS_BY_KEY,
                (_, None) => COUNT_BUCKETS,
            };
            let buckets = count.count_buckets.max(1) as usize;
            count.columns = (0..buckets).map(|i| format!("UNCHANGED{i}")).collect();
            count.declared_types = vec!["BIGINT".into(); buckets];
            count.arrays = vec![None; buckets];
            count.byte_charsets = vec![None; buckets];
            count.key_columns = Vec::new();
            count.computed = Vec::new();
            count.select = format!("SELECT COUNT(*) FROM {}", quote_identifier(&count.name));
            count.condition = Some(unchanged.to_string());
            count.role = Role::UnchangedCount { of };
            let index = self.tables.len();
            match table {
                Some(table) => {
                    // Its counts come with the table's units.
                    count.unit_count = 0;
                    per_entry.push(Vec::new());
                    let columns = qualified_columns(table, options.trim_char_on_server);
                    self.tables[of].changes_by_key = Some(ChangesByKey {
                        counts: index,
                        unchanged: unchanged.to_string(),
                        select: format!(
                            "SELECT {}, {}.{DB_KEY_COLUMN}",
                            columns.join(", "),
                            quote_identifier(&table.name)
                        ),
                    });
                }
                None => per_entry.push(units.iter().map(|u| Unit { table: index, ..*u }).collect()),
            }
            self.tables.push(count);
            let mut present = self.tables[of].clone();
            present.columns = key.columns.iter().map(|c| c.name.clone()).collect();
            present.declared_types = key.columns.iter().map(Column::declared_type).collect();
            present.arrays = vec![None; key.columns.len()];
            present.byte_charsets = byte_charsets(&key.columns);
            present.key_columns = (0..key.columns.len()).collect();
            present.computed = Vec::new();
            present.select =
                with_db_key(&select_list(&key, options.trim_char_on_server), &key.name);
            present.condition = Some(unchanged.to_string());
            present.role = Role::UnchangedKeys { of };
            present.unit_count = 0;
            present.changes_by_key = None;
            per_entry.push(Vec::new());
            self.tables.push(present);
        }
        per_entry.sort_by_key(|units| std::cmp::Reverse(units.len()));
        self.units = per_entry.into_iter().flatten().collect();
        self
    }

    /// Counts instead of reading the units of a stopped run that each
    /// table `(of, finished)` lists (first and end slot, as planned again
    /// now): they go to a [`Role::ResumeCheck`] entry of the table whose
    /// query is `select` (two counts per unit); the table keeps its unit
    /// count, for the destination takes them as its own again.
    pub fn with_resume_checks(mut self, checks: Vec<ResumeCheck>) -> Plan {
        let mut per_entry = self.units_by_entry();
        let listed = self.tables.len();
        for ResumeCheck {
            of,
            finished,
            select,
        } in checks
        {
            let (counted, read): (Vec<Unit>, Vec<Unit>) = per_entry[of]
                .iter()
                .partition(|u| finished.contains(&(u.first_slot, u.end_slot)));
            if counted.is_empty() {
                continue;
            }
            let mut check = self.tables[of].clone();
            check.columns = vec!["ROWS_NOW".into(), "CHANGED".into()];
            check.declared_types = vec!["BIGINT".into(); 2];
            check.arrays = vec![None; 2];
            check.byte_charsets = vec![None; 2];
            check.casts = Vec::new();
            check.key_columns = Vec::new();
            check.computed = Vec::new();
            check.count_buckets = 0;
            check.select = select;
            check.role = Role::ResumeCheck { of };
            check.unit_count = counted.len();
            let index = self.tables.len();
            per_entry[of] = read;
            per_entry.push(
                counted
                    .into_iter()
                    .map(|u| Unit { table: index, ..u })
                    .collect(),
            );
            self.tables.push(check);
        }
        per_entry.sort_by_key(|units| std::cmp::Reverse(units.len()));
        // The counts first: each is quick, and the units they keep mostly
        // come first in their tables (a run finishes them about in order),
        // so the units read after them do not wait in memory for them.
        let (counts, reads): (Vec<_>, Vec<_>) = per_entry
            .into_iter()
            .partition(|units| units.first().is_some_and(|u| u.table >= listed));
        self.units = counts.into_iter().chain(reads).flatten().collect();
        self
    }

    /// How many entries of the plan are of `kind`.
    pub fn count_of(&self, kind: Kind) -> usize {
        self.listed().filter(|t| t.kind == kind).count()
    }

    /// How many tables, views and queries it reads (not counting the
    /// helper reads of an incremental run).
    pub fn listed_len(&self) -> usize {
        self.listed().count()
    }

    /// The entries but the helper reads of an incremental run.
    fn listed(&self) -> impl Iterator<Item = &TablePlan> {
        self.tables.iter().filter(|t| !t.role.is_helper())
    }

    /// The units of each entry, in DB_KEY order: one pass, where
    /// [`Plan::units_of`] for each of thousands of tables would go over
    /// every unit of the plan for each.
    pub fn units_by_entry(&self) -> Vec<Vec<Unit>> {
        let mut per_entry = vec![Vec::new(); self.tables.len()];
        for unit in &self.units {
            per_entry[unit.table].push(*unit);
        }
        per_entry
    }

    /// The units of table `table`, in DB_KEY order.
    pub fn units_of(&self, table: usize) -> impl Iterator<Item = &Unit> {
        self.units.iter().filter(move |u| u.table == table)
    }

    /// Cuts table `table` again into units of about [`BLOB_UNIT_BYTES`]
    /// of BLOBs each, over the first `used_slots` data-page slots (the
    /// last unit open to the end), when its BLOBs make more units than
    /// its pages did: a table whose rows are mostly BLOBs has few data
    /// pages (each row holds only its blobs' ids and headers; their bytes
    /// lie on pages of their own), so its pages made it one unit, read by
    /// one worker however many there are. At most `workers` ×
    /// [`UNITS_PER_WORKER`] units, and one slot each at least. The
    /// units are contiguous DB_KEY ranges in order, as any others, so the
    /// file is the same bytes however the table is cut. Returns whether
    /// it was cut again.
    pub fn split_by_blob_bytes(
        &mut self,
        table: usize,
        used_slots: u64,
        blob_bytes: u64,
        workers: usize,
    ) -> bool {
        let entry = &mut self.tables[table];
        let wanted = blob_bytes
            .div_ceil(BLOB_UNIT_BYTES)
            .min(workers as u64 * UNITS_PER_WORKER)
            .min(used_slots);
        if entry.kind != Kind::Table || wanted <= entry.unit_count as u64 {
            return false;
        }
        if entry.slots == 0 {
            entry.slots = entry.pointer_pages as u64 * entry.dp_per_pp;
        }
        let units = entry.units_in_shares(table, wanted as usize, used_slots);
        entry.unit_count = units.len();
        let mut per_entry = self.units_by_entry();
        per_entry[table] = units;
        // Its bytes, not its units, make it big: it goes first.
        let first = per_entry.remove(table);
        per_entry.sort_by_key(|units| std::cmp::Reverse(units.len()));
        self.units = std::iter::once(first).chain(per_entry).flatten().collect();
        true
    }

    /// Gives each table (in plan order) its row condition: what
    /// [`crate::selection::apply`] returned for the same catalog.
    pub fn with_conditions(mut self, conditions: Vec<Option<String>>) -> Plan {
        assert_eq!(conditions.len(), self.tables.len(), "a condition per table");
        for (table, condition) in self.tables.iter_mut().zip(conditions) {
            table.condition = condition;
        }
        self
    }
}

/// Cuts `slots` data-page slots into units of `per_unit`, open at both ends.
fn split(table: usize, slots: u64, per_unit: u64) -> Vec<Unit> {
    let count = slots.div_ceil(per_unit).max(1);
    (0..count)
        .map(|i| Unit {
            table,
            seq: i as usize,
            first_slot: i * per_unit,
            end_slot: (i + 1 < count).then_some((i + 1) * per_unit),
        })
        .collect()
}

/// `SELECT <columns> FROM <table>`, where the server converts what the
/// client cannot: DECFLOAT to text (exact; the client API has no decoder
/// for the IEEE 754 decimal encodings), and text in a character set the
/// client has no decoder for (the DOS code pages, say) to UTF8.
///
/// With `trim_char` (attachments through a server), a CHAR
/// column's trailing blanks are removed by the server: they are padding,
/// which fbunload removes anyway, and a UTF8 CHAR(24) travels as 96 bytes
/// whatever it holds. Over an encrypted wire that cut a STOCK read
/// (ten CHAR(24)) from 4.0-4.2 s to 3.3-3.4 s on one machine, and on a
/// real network it is bytes the wire need not carry.
///
/// A CHAR column in a multi-byte character set is read as its bytes
/// ([`read_as_bytes`]).
fn select_list(table: &Table, trim_char: bool) -> String {
    format!(
        "SELECT {} FROM {}",
        select_columns(table, trim_char, None).join(", "),
        quote_identifier(&table.name)
    )
}

/// [`select_list`]'s columns, each named by `"TABLE"."COLUMN"`.
fn qualified_columns(table: &Table, trim_char: bool) -> Vec<String> {
    select_columns(table, trim_char, Some(&quote_identifier(&table.name)))
}

fn select_columns(table: &Table, trim_char: bool, qualifier: Option<&str>) -> Vec<String> {
    table
        .columns
        .iter()
        .map(|c| {
            let q = quote_identifier(&c.name);
            let column = match qualifier {
                Some(table) => format!("{table}.{q}"),
                None => q.clone(),
            };
            let value = match server_cast(c) {
                Some(target) => format!("CAST({column} AS {target})"),
                None if read_as_bytes(c) => {
                    // Trimmed by the server, a VARCHAR; else the client
                    // trims the CHAR.
                    let kind = if trim_char { "VARCHAR" } else { "CHAR" };
                    format!(
                        "CAST({column} AS {kind}({}) CHARACTER SET NONE)",
                        c.field_length
                    )
                }
                None => column,
            };
            if trim_char && blank_padded(c) {
                format!("TRIM(TRAILING FROM {value}) AS {q}")
            } else if value != q {
                format!("{value} AS {q}")
            } else {
                q
            }
        })
        .collect()
}

/// What the server describes for each column of [`select_list`]'s read
/// of `table`, worked out from the catalog: a plan of thousands of tables
/// then need not prepare each read, which costs the server as much as the
/// reader's own prepare (each attachment loads a table's metadata for
/// itself), and every reader's prepare still checks that the server
/// describes what was planned. `None` when a column's description is not
/// known here (a DECFLOAT's cast to VARCHAR takes the database's default
/// character set, a CSTRING), and the plan prepares that read as before.
///
/// Only what decides a column's Arrow field is worked out (type, scale,
/// character set, BLOB subtype, nullability): a text column's collation
/// is left out of its subtype, and lengths are the catalog's.
pub fn described_columns(table: &Table, trim_char: bool) -> Option<Vec<ColumnDesc>> {
    table
        .columns
        .iter()
        .map(|c| described_column(c, trim_char))
        .collect()
}

/// One column of [`described_columns`]. A CAST and a TRIM keep their
/// operand's nullability; a TRIM of a CHAR is a VARCHAR of its length.
fn described_column(column: &Column, trim_char: bool) -> Option<ColumnDesc> {
    let charset = i16::from(column.charset_id.unwrap_or(CHARSET_NONE));
    let text = |fixed: bool, subtype: i16, length: i16| ColumnDesc {
        name: String::new(),
        sql_type: if fixed && !(trim_char && blank_padded(column)) {
            sql_type::TEXT
        } else {
            sql_type::VARYING
        },
        scale: 0,
        subtype,
        length: length as u16,
        nullable: !column.not_null,
    };
    let blob = |subtype: i16, charset: i16| ColumnDesc {
        name: String::new(),
        sql_type: sql_type::BLOB,
        // A text BLOB's character set is described in its scale.
        scale: charset,
        subtype,
        length: 8,
        nullable: !column.not_null,
    };
    let stored = |sql_type: i16| ColumnDesc {
        name: String::new(),
        sql_type,
        scale: column.scale,
        subtype: column.sub_type,
        length: column.field_length as u16,
        nullable: !column.not_null,
    };
    if !column.dimensions.is_empty() {
        return Some(ColumnDesc {
            length: 8,
            ..stored(sql_type::ARRAY)
        });
    }
    if column.is_decfloat() {
        return None;
    }
    if server_cast(column).is_some() {
        let chars = column.char_length.unwrap_or(i16::MAX);
        let utf8 = i16::from(CHARSET_UTF8);
        return Some(match column.is_fixed_text() {
            Some(fixed) if i32::from(chars) * 4 <= 32_765 => text(fixed, utf8, chars * 4),
            _ => blob(1, utf8),
        });
    }
    if read_as_bytes(column) {
        return Some(text(true, i16::from(CHARSET_NONE), column.field_length));
    }
    Some(match column.field_type {
        blr::SMALLINT => stored(sql_type::SHORT),
        blr::INTEGER => stored(sql_type::LONG),
        blr::BIGINT => stored(sql_type::INT64),
        blr::INT128 => stored(sql_type::INT128),
        blr::FLOAT => stored(sql_type::FLOAT),
        blr::DOUBLE => stored(sql_type::DOUBLE),
        blr::D_FLOAT => stored(sql_type::D_FLOAT),
        blr::DATE => stored(sql_type::TYPE_DATE),
        blr::TIME => stored(sql_type::TYPE_TIME),
        blr::TIMESTAMP => stored(sql_type::TIMESTAMP),
        blr::TIME_TZ => stored(sql_type::TIME_TZ),
        blr::TIMESTAMP_TZ => stored(sql_type::TIMESTAMP_TZ),
        blr::BOOLEAN => stored(sql_type::BOOLEAN),
        blr::CHAR => text(true, charset, column.field_length),
        blr::VARCHAR => text(false, charset, column.field_length),
        blr::BLOB if column.sub_type == 1 => blob(1, charset),
        blr::BLOB => blob(column.sub_type, 0),
        _ => return None,
    })
}

/// The DB_KEY a read of kept keys ends with ([`with_db_key`]), as the
/// server describes it: eight bytes of OCTETS.
pub fn described_db_key() -> ColumnDesc {
    ColumnDesc {
        name: String::new(),
        sql_type: sql_type::TEXT,
        scale: 0,
        subtype: i16::from(CHARSET_OCTETS),
        length: 8,
        nullable: true,
    }
}

/// A table's `select` (`SELECT ... FROM "T"`, see [`select_list`]) reading
/// each row's DB_KEY last as well. The table's quoted name is cut off the
/// end, not searched for: a name may hold ` FROM `.
fn with_db_key(select: &str, table: &str) -> String {
    let from = format!(" FROM {}", quote_identifier(table));
    let list = select
        .strip_suffix(&from)
        .expect("a table's select ends with its FROM");
    format!("{list}, {DB_KEY_COLUMN}{from}")
}

/// For each column, the character set to decode it in where the select
/// reads it as its bytes (see [`read_as_bytes`]).
fn byte_charsets(columns: &[Column]) -> Vec<Option<u8>> {
    columns
        .iter()
        .map(|c| c.charset_id.filter(|_| read_as_bytes(c)))
        .collect()
}

/// Whether the select reads a column as its bytes, `CHARACTER SET NONE`,
/// to be decoded in its own character set by the client: a CHAR in a
/// multi-byte character set the client decodes (UTF8, say).
///
/// Why: the engine moves such a value into the row's message by counting
/// its characters (through ICU's UTF-16) to check it fits, and a server
/// trims its padding the same way; bytes in NONE are copied and trimmed of
/// `0x20` as they are. In every one of Firebird's character sets a `0x20`
/// byte is a blank, never part of another character, so the trimmed bytes
/// are the same. Reading STOCK (ten UTF8 CHAR(24)) to CSV at -j2 took
/// 1.85 s instead of 2.04 through a Firebird 5 server on the same two
/// cores, 1.10 s instead of 1.34 on the embedded engine (PERFORMANCE.md).
fn read_as_bytes(column: &Column) -> bool {
    let multi_byte = column
        .char_length
        .is_some_and(|chars| i32::from(column.field_length) > i32::from(chars));
    // A VARCHAR holds 32,765 bytes at most, a CHAR up to 32,767.
    const VARCHAR_BYTES: i16 = 32_765;
    blank_padded(column)
        && column.field_length <= VARCHAR_BYTES
        && multi_byte
        && column
            .charset_id
            .is_some_and(|id| id != CHARSET_NONE && TextDecoder::client_reads(id))
}

/// A CHAR (not an array's elements) padded with blanks: every character
/// set but OCTETS, which pads with zero bytes.
fn blank_padded(column: &Column) -> bool {
    column.is_fixed_text() == Some(true)
        && column.dimensions.is_empty()
        && column.charset_id != Some(CHARSET_OCTETS)
}

/// The type the server must cast a column to before fbunload can read it,
/// if any. Text goes to UTF8 at its length in characters where that fits
/// a VARCHAR (32,765 bytes, 4 per UTF8 character), else to a text BLOB.
fn server_cast(column: &Column) -> Option<String> {
    // An array's elements are converted by the slice that reads them.
    if !column.dimensions.is_empty() {
        return None;
    }
    if column.is_decfloat() {
        return Some("VARCHAR(64)".into());
    }
    let charset = column.charset_id?;
    if TextDecoder::client_reads(charset) {
        return None;
    }
    const UTF8_BLOB: &str = "BLOB SUB_TYPE TEXT CHARACTER SET UTF8";
    let length = column.char_length.unwrap_or(i16::MAX) as i32;
    Some(match column.is_fixed_text() {
        Some(fixed) if length * 4 <= 32_765 => {
            let kind = if fixed { "CHAR" } else { "VARCHAR" };
            format!("{kind}({length}) CHARACTER SET UTF8")
        }
        _ => UTF8_BLOB.into(),
    })
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .tables
            .iter()
            .map(|t| crate::printable(&t.name).chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        // Estimates, once made (`--plan`), in two more columns (what they
        // are: docs/command-line.md, Estimates).
        let estimated = self.listed().any(|t| t.estimate.is_some());
        let estimate_header = if estimated {
            format!("  {:>12}  {:>10}", "~rows", "~MB")
        } else {
            String::new()
        };
        writeln!(
            f,
            "{:width$}  {:>13}  {:>6}{estimate_header}  columns",
            "table", "pointer pages", "units"
        )?;
        for t in self.listed() {
            let estimate = match (estimated, &t.estimate) {
                (false, _) => String::new(),
                (true, None) => format!("  {:>12}  {:>10}", "-", "-"),
                (true, Some(e)) => format!(
                    "  {:>12}  {:>10}",
                    e.rows.map_or("-".into(), |r| r.to_string()),
                    e.bytes()
                        .map_or("-".into(), |b| format!("{:.1}", b as f64 / 1e6))
                ),
            };
            let pages = match (t.kind, &t.split_by) {
                (Kind::Table, _) | (_, Some(_)) => t.pointer_pages.to_string(),
                _ => "-".into(),
            };
            let kind = match (t.kind, &t.split_by) {
                (Kind::Table, _) => String::new(),
                (Kind::Query, Some(table)) => {
                    format!("  query, split by {}", crate::printable(table))
                }
                (kind, _) => format!("  {}", kind.as_str()),
            };
            writeln!(
                f,
                "{:width$}  {:>13}  {:>6}{estimate}  {:>7}{kind}",
                crate::printable(&t.name),
                pages,
                t.unit_count,
                t.columns.len()
            )?;
        }
        for t in self.listed().filter(|t| t.condition.is_some()) {
            let condition = t.condition.as_deref().unwrap_or_default();
            writeln!(
                f,
                "{}: only rows where {}",
                crate::printable(&t.name),
                crate::printable(condition)
            )?;
        }
        for t in self.listed() {
            if let Some(query) = &t.query {
                writeln!(
                    f,
                    "{}: {}",
                    crate::printable(&t.name),
                    crate::printable(query)
                )?;
            }
        }
        write!(f, "{}", counted(self.count_of(Kind::Table) as u64, "table"))?;
        for (kind, noun) in [(Kind::View, "view"), (Kind::Query, "query")] {
            match self.count_of(kind) {
                0 => {}
                1 => write!(f, ", 1 {noun}")?,
                n if kind == Kind::Query => write!(f, ", {n} queries")?,
                n => write!(f, ", {n} {noun}s")?,
            }
        }
        write!(f, ", {}", counted(self.units.len() as u64, "unit"))?;
        if self.count_of(Kind::Table) > 0 || self.tables.iter().any(|t| t.split_by.is_some()) {
            write!(f, " of up to {}", counted(self.unit_pages, "data page"))?;
        }
        Ok(())
    }
}

/// "1 table", "2 tables": a count and its noun, in the plural unless one.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Column;

    fn table(name: &str, id: u16, pps: u32) -> Table {
        Table {
            relation_id: id,
            name: name.into(),
            columns: vec![
                Column {
                    name: "ID".into(),
                    field_type: 8,
                    ..Column::default()
                },
                Column {
                    name: "Amount \"x\"".into(),
                    field_type: 25,
                    precision: Some(34),
                    ..Column::default()
                },
            ],
            computed: Vec::new(),
            pointer_pages: pps,
            readable_by_user: false,
        }
    }

    fn options(unit_pages: Option<u64>, workers: usize) -> PlanOptions {
        PlanOptions {
            unit_pages,
            workers,
            page_size: 8192,
            split_tables: true,
            ..PlanOptions::default()
        }
    }

    #[test]
    fn slots_per_pointer_page_match_firebird() {
        // Ods::dataPagesPerPP for the page sizes Firebird supports.
        assert_eq!(data_pages_per_pointer_page(4096), 808);
        assert_eq!(data_pages_per_pointer_page(8192), 1632);
        assert_eq!(data_pages_per_pointer_page(16384), 3264);
        assert_eq!(data_pages_per_pointer_page(32768), 6544);
    }

    #[test]
    fn units_cover_every_slot_once_with_open_ends() {
        for slots in [0, 1, 7, 808, 809, 1632 * 5] {
            for per_unit in [1, 3, 64, 808, 100_000] {
                let units = split(0, slots, per_unit);
                assert_eq!(units[0].first_slot, 0);
                assert_eq!(units.last().unwrap().end_slot, None);
                for pair in units.windows(2) {
                    assert_eq!(pair[0].end_slot, Some(pair[1].first_slot));
                    assert_eq!(pair[1].first_slot - pair[0].first_slot, per_unit);
                }
                assert_eq!(units.len() as u64, slots.div_ceil(per_unit).max(1));
                assert!(units.iter().enumerate().all(|(i, u)| u.seq == i));
            }
        }
    }

    #[test]
    fn the_printed_plan_counts_in_the_singular_where_one() {
        let one = Plan::new(&[table("S", 1, 1)], options(Some(1), 1)).to_string();
        assert!(
            one.ends_with("\n1 table, 1 unit of up to 1 data page"),
            "{one}"
        );
        let two =
            Plan::new(&[table("S", 1, 1), table("T", 2, 1)], options(Some(64), 1)).to_string();
        assert!(
            two.ends_with("\n2 tables, 2 units of up to 64 data pages"),
            "{two}"
        );
    }

    #[test]
    fn automatic_units_aim_at_several_per_worker_within_bounds() {
        let big = [table("BIG", 130, 6)];
        // 6 PPs * 1632 slots / (2 workers * 8) = 612 pages per unit.
        assert_eq!(options(None, 2).unit_pages_for(&big), 612);
        assert_eq!(Plan::new(&big, options(None, 2)).units.len(), 16);
        // A table of one pointer page is kept whole.
        assert_eq!(
            Plan::new(&[table("S", 1, 1)], options(Some(64), 4))
                .units
                .len(),
            1
        );
        // Never more than a PP, never less than the minimum.
        assert_eq!(options(None, 1).unit_pages_for(&[table("H", 1, 500)]), 1632);
        assert_eq!(
            options(None, 64).unit_pages_for(&[table("S", 1, 1)]),
            MIN_UNIT_PAGES
        );
        assert_eq!(options(Some(5), 2).unit_pages_for(&big), 5);
    }

    #[test]
    fn biggest_tables_are_dispatched_first() {
        let plan = Plan::new(
            &[
                table("SMALL", 130, 1),
                table("BIG", 131, 3),
                table("MID", 132, 2),
            ],
            options(Some(1632), 1),
        );
        let order: Vec<(usize, usize)> = plan.units.iter().map(|u| (u.table, u.seq)).collect();
        assert_eq!(order, vec![(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (0, 0)]);
    }

    #[test]
    fn unit_sql_uses_dbkey_ranges_and_quotes_names() {
        let plan = Plan::new(&[table("my table", 140, 2)], options(Some(1000), 1));
        let t = &plan.tables[0];
        assert_eq!(plan.units.len(), 4);
        assert_eq!(
            t.unit_sql(&plan.units[0]),
            "SELECT \"ID\", CAST(\"Amount \"\"x\"\"\" AS VARCHAR(64)) AS \"Amount \"\"x\"\"\" \
             FROM \"my table\" WHERE RDB$DB_KEY < MAKE_DBKEY(140, 0, 1000, 0)"
        );
        assert!(t.unit_sql(&plan.units[1]).ends_with(
            "WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 1000, 0) AND RDB$DB_KEY < MAKE_DBKEY(140, 0, 368, 1)"
        ));
        assert!(t
            .unit_sql(&plan.units[3])
            .ends_with("WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 1368, 1)"));
        assert_eq!(t.declared_types, vec!["INTEGER", "DECFLOAT(34)"]);

        // A condition goes before the range, on lines of its own, its
        // comments blanked; the plan keeps it as given.
        let plan = plan.with_conditions(vec![Some("ID > 1 -- note".into())]);
        let t = &plan.tables[0];
        assert_eq!(t.condition.as_deref(), Some("ID > 1 -- note"));
        assert!(t.unit_sql(&plan.units[1]).ends_with(
            "WHERE (\nID > 1        \n) AND RDB$DB_KEY >= MAKE_DBKEY(140, 0, 1000, 0) \
             AND RDB$DB_KEY < MAKE_DBKEY(140, 0, 368, 1)"
        ));
        assert_eq!(
            t.count_sql(),
            "SELECT COUNT(*) FROM \"my table\" WHERE (\nID > 1        \n)"
        );
    }

    /// Table "A FROM B" (a name that holds what a select is cut at),
    /// keeping its first column as its key and read for the rows changed
    /// since transaction 90; `with_entry`: with its catalog entry.
    fn read_for_changes(with_entry: bool) -> Plan {
        let name = "A FROM B";
        let mut plan = Plan::new(&[table(name, 140, 2)], options(Some(1000), 2));
        plan.tables[0].role = Role::Upserts;
        plan.tables[0].condition = Some("RDB$RECORD_VERSION >= 90".into());
        let key = Table {
            columns: table(name, 140, 2).columns[..1].to_vec(),
            ..table(name, 140, 2)
        };
        let catalog = [table(name, 140, 2)];
        plan.with_kept_keys(
            vec![(0, key)],
            if with_entry { &catalog } else { &[] },
            "RDB$RECORD_VERSION < 90",
            options(Some(1000), 2),
        )
    }

    #[test]
    fn a_table_keeping_keys_reads_its_db_key_and_one_read_for_changes_gets_helpers() {
        // Without its catalog entry: its units and the count's apart.
        let plan = read_for_changes(false);
        let t = &plan.tables[0];
        assert_eq!(t.key_columns, [0]);
        assert!(t.unit_sql(&plan.units[0]).starts_with(
            "SELECT \"ID\", CAST(\"Amount \"\"x\"\"\" AS VARCHAR(64)) AS \"Amount \"\"x\"\"\", \
             RDB$DB_KEY FROM \"A FROM B\" WHERE (\nRDB$RECORD_VERSION >= 90\n) AND"
        ));
        // The count covers the same units; the unchanged keys have none
        // until the destination asks.
        let (count, keys) = (&plan.tables[1], &plan.tables[2]);
        assert_eq!(count.role, Role::UnchangedCount { of: 0 });
        assert_eq!(keys.role, Role::UnchangedKeys { of: 0 });
        assert_eq!(t.changes_by_key, None);
        let slots = |table| {
            plan.units_of(table)
                .map(|u| (u.seq, u.first_slot, u.end_slot))
                .collect::<Vec<_>>()
        };
        assert_eq!(slots(1), slots(0));
        assert!(slots(2).is_empty());
        // Counted in 64 ranges of 16 pages (1,000 in all), each apart; the
        // last range, past the unit's end, empty.
        let sql = count.unit_sql(&plan.units_of(1).next().copied().unwrap());
        let range = |first: u64, end: u64| {
            let from = match first {
                0 => String::new(),
                _ => format!(" AND RDB$DB_KEY >= MAKE_DBKEY(140, 0, {first}, 0)"),
            };
            format!(
                "(SELECT COUNT(*) FROM \"A FROM B\" WHERE (\nRDB$RECORD_VERSION < 90\n){from} \
                 AND RDB$DB_KEY < MAKE_DBKEY(140, 0, {end}, 0))"
            )
        };
        let starts = format!("SELECT {},\n{},", range(0, 16), range(16, 32));
        assert!(sql.starts_with(&starts), "{sql}");
        assert!(
            sql.contains(&format!(
                "{},\n(SELECT COUNT(*) FROM RDB$DATABASE WHERE 1 = 0)",
                range(992, 1000)
            )),
            "{sql}"
        );
        assert!(sql.ends_with("(SELECT COUNT(*) FROM RDB$DATABASE WHERE 1 = 0) FROM RDB$DATABASE"));
        assert_eq!(sql.matches("COUNT(*)").count(), 64);
        assert_eq!(count.columns.len(), 64);
        assert!(keys
            .select_sql()
            .starts_with("SELECT \"ID\", RDB$DB_KEY FROM \"A FROM B\" WHERE"));
        // Helpers are not listed as tables of their own.
        assert_eq!(plan.count_of(Kind::Table), 1);
        assert!(!plan.to_string().contains("RDB$RECORD_VERSION < 90"));
    }

    #[test]
    fn a_unit_read_for_its_changes_scans_its_pages_once_then_fetches_its_changed_rows_by_key() {
        let plan = read_for_changes(true);
        let (t, count) = (&plan.tables[0], &plan.tables[1]);
        assert_eq!(t.changes_by_key.as_ref().map(|c| c.counts), Some(1));
        assert_eq!(count.role, Role::UnchangedCount { of: 0 });
        // Only the table's units are read: no unit scans its pages for the
        // count alone.
        assert!(plan.units_of(0).count() > 1);
        assert!(plan.units.iter().all(|u| u.table == 0));
        let unit = plan.units_of(0).next().copied().unwrap();
        let ranges = count.count_buckets(&unit);
        assert_eq!(ranges.len(), COUNT_BUCKETS_BY_KEY as usize);
        assert_eq!(count.columns.len(), ranges.len());
        let sql = t.changes_scan_sql(&ranges).unwrap();
        // One scan per range: its unchanged rows counted and its changed
        // rows' DB_KEYs listed by the same subquery.
        assert_eq!(sql.matches("FROM \"A FROM B\"").count(), 16, "{sql}");
        assert!(sql.starts_with(
            "SELECT (SELECT COUNT(IIF((RDB$RECORD_VERSION < 90), 1, NULL)) || \
             COALESCE(' ' || LIST(IIF((RDB$RECORD_VERSION >= 90), HEX_ENCODE(CAST(RDB$DB_KEY \
             AS VARCHAR(8) CHARACTER SET OCTETS)), NULL), ' '), '') FROM \"A FROM B\" \
             WHERE RDB$DB_KEY < MAKE_DBKEY(140, 0, 63, 0)),\n"
        ));
        assert!(
            sql.ends_with(
                "WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 945, 0) AND \
                 RDB$DB_KEY < MAKE_DBKEY(140, 0, 1000, 0)) FROM RDB$DATABASE"
            ),
            "{sql}"
        );
        // A range past the unit's end reads nothing.
        let sql = t
            .changes_scan_sql(&[(0, Some(16)), (16, Some(16))])
            .unwrap();
        assert!(
            sql.ends_with(",\n(SELECT '0' FROM RDB$DATABASE) FROM RDB$DATABASE"),
            "{sql}"
        );
        // The changed rows: by their keys, in their order, every column
        // named by its table (the key list's column is `I`).
        let keys = ["8000000001000000", "80000000a1000000"];
        let fetch = t.rows_at_sql(&keys).unwrap();
        assert_eq!(
            fetch,
            "WITH RECURSIVE FBUNLOAD_KEYS (I) AS (SELECT 0 FROM RDB$DATABASE UNION ALL \
             SELECT I + 1 FROM FBUNLOAD_KEYS WHERE I < 1) SELECT \"A FROM B\".\"ID\" AS \"ID\", \
             CAST(\"A FROM B\".\"Amount \"\"x\"\"\" AS VARCHAR(64)) AS \"Amount \"\"x\"\"\", \
             \"A FROM B\".RDB$DB_KEY FROM FBUNLOAD_KEYS JOIN \"A FROM B\" ON \
             \"A FROM B\".RDB$DB_KEY = HEX_DECODE(SUBSTRING('800000000100000080000000a1000000' \
             FROM FBUNLOAD_KEYS.I * 16 + 1 FOR 16))"
        );
        // Nothing but keys goes into the SQL, and no more than one query
        // counts out.
        assert_eq!(t.rows_at_sql(&["800000000100000'"]), None);
        assert_eq!(t.rows_at_sql(&[]), None);
        let many = vec!["8000000001000000"; KEYS_PER_FETCH + 1];
        assert_eq!(t.rows_at_sql(&many), None);
        assert!(t.rows_at_sql(&many[1..]).is_some());
        // Entries that are not a table's changes have none of this.
        assert_eq!(count.changes_scan_sql(&ranges), None);
        assert_eq!(plan.tables[2].rows_at_sql(&keys), None);
    }

    #[test]
    fn a_count_s_ranges_cover_its_unit_once_in_order() {
        let plan = Plan::new(&[one_page_table(vec![])], options(Some(1000), 2));
        let mut t = plan.tables[0].clone();
        t.count_buckets = 64;
        let unit = |first_slot, end_slot| Unit {
            table: 0,
            seq: 0,
            first_slot,
            end_slot,
        };
        for u in [
            unit(0, Some(1000)),
            unit(1000, Some(1010)),
            unit(5, Some(6)),
            unit(2000, None),
            unit(0, None),
        ] {
            let ranges = t.count_buckets(&u);
            assert_eq!(ranges.len(), 64);
            assert_eq!(ranges[0].0, u.first_slot, "{u:?}");
            assert_eq!(ranges[63].1, u.end_slot, "{u:?}");
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].1, Some(pair[1].0), "{u:?}: {ranges:?}");
            }
            let pages = ranges
                .iter()
                .filter(|(first, end)| end.is_none_or(|e| e > *first))
                .count();
            assert!(pages >= 1, "{u:?}");
        }
    }

    /// Table "T" of one pointer page.
    fn one_page_table(columns: Vec<Column>) -> Table {
        Table {
            relation_id: 150,
            name: "T".into(),
            columns,
            computed: Vec::new(),
            pointer_pages: 1,
            readable_by_user: false,
        }
    }

    fn text(name: &str, field_type: i16, length: i16, charset: u8) -> Column {
        // Bytes per character: UNICODE_FSS, UTF8, SJIS_0208, GB18030.
        let widest = match charset {
            3 => 3,
            4 | 69 => 4,
            5 => 2,
            _ => 1,
        };
        Column {
            name: name.into(),
            field_type,
            char_length: Some(length),
            charset_id: Some(charset),
            field_length: length.saturating_mul(widest),
            ..Column::default()
        }
    }

    #[test]
    fn the_server_converts_only_the_character_sets_the_client_cannot() {
        let table = one_page_table(vec![
            text("UTF", 37, 100, 4),
            text("WIN", 37, 32765, 53),
            text("DOS", 14, 10, 10),
            text("LONG_DOS", 37, 20000, 10),
            Column {
                sub_type: 1,
                ..text("BLOB_DOS", 261, 0, 10)
            },
        ]);
        assert_eq!(
            select_list(&table, false),
            "SELECT \"UTF\", \"WIN\", CAST(\"DOS\" AS CHAR(10) CHARACTER SET UTF8) AS \"DOS\", \
             CAST(\"LONG_DOS\" AS BLOB SUB_TYPE TEXT CHARACTER SET UTF8) AS \"LONG_DOS\", \
             CAST(\"BLOB_DOS\" AS BLOB SUB_TYPE TEXT CHARACTER SET UTF8) AS \"BLOB_DOS\" FROM \"T\""
        );
    }

    #[test]
    fn through_a_server_char_padding_stays_off_the_wire() {
        let table = one_page_table(vec![
            text("PADDED", 14, 24, 4),
            text("DOS", 14, 10, 10),
            text("BYTES", 14, 16, 1),
            text("VARYING", 37, 10, 4),
            Column {
                dimensions: vec![(1, 2)],
                ..text("ARRAY", 14, 3, 4)
            },
        ]);
        assert_eq!(
            select_list(&table, true),
            "SELECT TRIM(TRAILING FROM CAST(\"PADDED\" AS VARCHAR(96) CHARACTER SET NONE)) \
             AS \"PADDED\", \
             TRIM(TRAILING FROM CAST(\"DOS\" AS CHAR(10) CHARACTER SET UTF8)) AS \"DOS\", \
             \"BYTES\", \"VARYING\", \"ARRAY\" FROM \"T\""
        );
    }

    #[test]
    fn multi_byte_char_columns_are_read_as_their_bytes() {
        let table = one_page_table(vec![
            text("UTF", 14, 24, 4),
            text("SJIS", 14, 5, 5),
            text("GB", 14, 2, 69),
            text("WIN", 14, 4, 53),
            text("NONE", 14, 4, 0),
            // 32,766 bytes: more than a VARCHAR holds.
            text("FSS", 14, 10_922, 3),
            text("VARYING", 37, 10, 4),
        ]);
        assert_eq!(
            select_list(&table, false),
            "SELECT CAST(\"UTF\" AS CHAR(96) CHARACTER SET NONE) AS \"UTF\", \
             CAST(\"SJIS\" AS CHAR(10) CHARACTER SET NONE) AS \"SJIS\", \
             CAST(\"GB\" AS CHAR(8) CHARACTER SET NONE) AS \"GB\", \
             \"WIN\", \"NONE\", \"FSS\", \"VARYING\" FROM \"T\""
        );
        assert_eq!(
            select_list(&table, true),
            "SELECT TRIM(TRAILING FROM CAST(\"UTF\" AS VARCHAR(96) CHARACTER SET NONE)) AS \"UTF\", \
             TRIM(TRAILING FROM CAST(\"SJIS\" AS VARCHAR(10) CHARACTER SET NONE)) AS \"SJIS\", \
             TRIM(TRAILING FROM CAST(\"GB\" AS VARCHAR(8) CHARACTER SET NONE)) AS \"GB\", \
             TRIM(TRAILING FROM \"WIN\") AS \"WIN\", TRIM(TRAILING FROM \"NONE\") AS \"NONE\", \
             TRIM(TRAILING FROM \"FSS\") AS \"FSS\", \"VARYING\" FROM \"T\""
        );
        let plan = Plan::new(&[table], options(None, 1));
        assert_eq!(
            plan.tables[0].byte_charsets,
            vec![Some(4), Some(5), Some(69), None, None, None, None]
        );
    }

    #[test]
    fn a_table_of_blobs_is_cut_by_its_blob_bytes() {
        let mut plan = Plan::new(
            &[table("ROWS", 130, 3), table("BLOBS", 131, 1)],
            options(None, 2),
        );
        let rows_units = plan.tables[0].unit_count;
        assert_eq!(plan.tables[1].unit_count, 1, "one pointer page: read whole");
        // 2 GB of BLOBs on 160 pages: 16 units (2 workers x 8), not 32.
        assert!(plan.split_by_blob_bytes(1, 160, 2 << 30, 2));
        let units: Vec<&Unit> = plan.units_of(1).collect();
        assert_eq!(units.len(), 16);
        assert_eq!(plan.tables[1].unit_count, 16);
        assert_eq!(units[0].first_slot, 0);
        assert_eq!(units[1].first_slot, 10);
        assert_eq!(units[15].end_slot, None, "open to the end");
        assert!(units
            .windows(2)
            .all(|w| w[0].end_slot == Some(w[1].first_slot)));
        assert!(units.iter().enumerate().all(|(i, u)| u.seq == i));
        // Handed out first, the other table's units unchanged after it.
        assert!(plan.units[..16].iter().all(|u| u.table == 1));
        assert_eq!(plan.units_of(0).count(), rows_units);
        assert!(plan.tables[1]
            .unit_sql(units[1])
            .contains("MAKE_DBKEY(131, 0, 10, 0)"));
        // 100 MB makes 2 units; fewer BLOB bytes or slots than that, or a
        // table cut finer already, stay as they are.
        let mut small = Plan::new(&[table("BLOBS", 131, 1)], options(None, 2));
        assert!(!small.split_by_blob_bytes(0, 100, 60 << 20, 2));
        assert!(!small.split_by_blob_bytes(0, 1, 2 << 30, 2));
        assert!(small.split_by_blob_bytes(0, 100, 100 << 20, 2));
        assert_eq!(small.tables[0].unit_count, 2);
        assert!(!small.split_by_blob_bytes(0, 100, 100 << 20, 2));
    }

    #[test]
    fn shares_cut_a_table_into_the_units_asked_for() {
        let plan = Plan::new(
            &[table("SMALL", 130, 1), table("BIG", 131, 2)],
            options(Some(64), 1),
        );
        let big = &plan.tables[1];
        // 2 PPs of 1632 slots: 3264 slots in 3 shares of 1088.
        let shares = big.units_in_shares(1, 3, 3264);
        assert_eq!(shares.len(), 3);
        assert_eq!(shares[1].first_slot, 1088);
        assert_eq!(shares[2].end_slot, None);
        assert!(shares.iter().all(|u| u.table == 1));
        // Over the slots in use only; the last share takes the rest.
        let shares = big.units_in_shares(1, 4, 2000);
        let starts: Vec<u64> = shares.iter().map(|u| u.first_slot).collect();
        assert_eq!(starts, vec![0, 500, 1000, 1500]);
        assert_eq!(shares[3].end_slot, None);
        // No more units than slots; a table read whole stays one unit.
        assert_eq!(big.units_in_shares(1, 10_000, 3264).len(), 3264);
        assert_eq!(big.units_in_shares(1, 4, 0).len(), 1);
        assert_eq!(plan.tables[0].units_in_shares(0, 4, 0).len(), 1);
        assert_eq!(
            big.rows_from_sql(&[1700, 1701]),
            "SELECT CAST(IIF(EXISTS(SELECT 1 FROM \"BIG\" WHERE RDB$DB_KEY >= \
             MAKE_DBKEY(131, 0, 68, 1)), 1, 0)\n + IIF(EXISTS(SELECT 1 FROM \"BIG\" WHERE \
             RDB$DB_KEY >= MAKE_DBKEY(131, 0, 69, 1)), 1, 0) AS BIGINT) FROM RDB$DATABASE"
        );
        let in_order: Vec<usize> = plan.units_of(1).map(|u| u.seq).collect();
        assert_eq!(in_order, (0..big.unit_count).collect::<Vec<_>>());
    }

    #[test]
    fn views_and_queries_join_the_plan_and_split_queries_use_their_driving_table() {
        let options = options(None, 4);
        let spec = crate::QuerySpec {
            name: "Q".into(),
            sql: "SELECT o.ID, c.D FROM ORDERS o JOIN C c ON c.ID = o.C".into(),
            split_by: Some("ORDERS".into()),
        };
        let driving = crate::query::check_query(&spec).unwrap().unwrap();
        let read = |name: &str, kind, sql: &str, casts: Vec<Option<String>>| Read {
            name: name.into(),
            kind,
            sql: sql.into(),
            columns: vec!["ID".into(), "D".into()],
            declared_types: vec!["INTEGER".into(), "DECFLOAT(34)".into()],
            casts,
            driving: None,
        };
        let plan = Plan::new(&[table("T", 130, 1)], options).with_reads(
            vec![
                read(
                    "V",
                    Kind::View,
                    "SELECT \"ID\", \"D\" FROM \"V\"",
                    vec![None, None],
                ),
                Read {
                    driving: Some((driving, table("ORDERS", 140, 3))),
                    ..read(
                        "Q",
                        Kind::Query,
                        &spec.sql,
                        vec![None, Some("VARCHAR(64)".into())],
                    )
                },
            ],
            options,
        );
        let kinds: Vec<Kind> = plan.tables.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, [Kind::Table, Kind::View, Kind::Query]);
        // One pointer page per unit, whatever the workers: 3 units, handed
        // out first; the view's one unit last.
        let q = &plan.tables[2];
        assert_eq!(q.unit_count, 3);
        assert_eq!(plan.units[0].table, 2);
        assert_eq!(plan.units.last().unwrap().table, 1);
        assert_eq!(q.split_by.as_deref(), Some("ORDERS"));
        // Shares of it look for rows in its driving table.
        assert!(q
            .rows_from_sql(&[1])
            .starts_with("SELECT CAST(IIF(EXISTS(SELECT 1 FROM \"ORDERS\" WHERE RDB$DB_KEY >="));
        assert_eq!(
            q.unit_sql(&plan.units[1]),
            "SELECT C1, CAST(C2 AS VARCHAR(64)) FROM (\nSELECT o.ID, c.D FROM \n(SELECT * FROM \
             \"ORDERS\" WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 0, 1) AND RDB$DB_KEY < \
             MAKE_DBKEY(140, 0, 0, 2)) o JOIN C c ON c.ID = o.C\n) AS Q (C1, C2)"
        );
        assert_eq!(
            q.count_sql(),
            format!("SELECT COUNT(*) FROM (\n{}\n) AS Q (C1, C2)", spec.sql)
        );
        let v = &plan.tables[1];
        assert_eq!(v.select_sql(), "SELECT \"ID\", \"D\" FROM \"V\"");
        assert_eq!(
            v.unit_sql(&plan.units[plan.units.len() - 1]),
            v.select_sql()
        );
        assert_eq!(v.count_sql(), "SELECT COUNT(*) FROM \"V\"");
        let text = plan.to_string();
        assert!(text.contains("  view\n"), "{text}");
        assert!(text.contains("  query, split by ORDERS\n"), "{text}");
        assert!(text.contains("\nQ: SELECT o.ID"), "{text}");
        assert!(
            text.ends_with("1 table, 1 view, 1 query, 5 units of up to 1632 data pages"),
            "{text}"
        );
    }

    #[test]
    fn without_make_dbkey_a_table_is_one_unit() {
        let plan = Plan::new(
            &[table("T", 140, 9)],
            PlanOptions {
                split_tables: false,
                ..options(Some(1), 4)
            },
        );
        assert_eq!(plan.units.len(), 1);
        assert!(!plan.tables[0].unit_sql(&plan.units[0]).contains("WHERE"));
    }
}

/// A [`TextDecoder`] in a plan sent to a reader process: its character
/// set's name.
mod literals_by_name {
    use fbunload_decode::TextDecoder;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(decoder: &TextDecoder, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(decoder.charset_name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TextDecoder, D::Error> {
        let name = String::deserialize(d)?;
        TextDecoder::for_charset(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown character set {name:?}")))
    }
}
