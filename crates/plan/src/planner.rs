//! Cutting tables into units of work.
//!
//! A table's rows live on data pages listed by its pointer pages (PPs).
//! `MAKE_DBKEY(relation, 0, 0, pp)` is the first record number a PP can
//! address, so `RDB$DB_KEY >= MAKE_DBKEY(r,0,0,lo) AND RDB$DB_KEY <
//! MAKE_DBKEY(r,0,0,hi)` reads exactly the rows under PPs `lo..hi`, and
//! Firebird 5 turns that into a range scan of those pages only.
//!
//! Units depend only on the catalog and the options, never on the number
//! of workers: that, plus writing each table's units in order, is what
//! makes the output byte-identical for any `--parallel`. The first unit has
//! no lower bound and the last no upper bound, so rows on pointer pages
//! allocated after the catalog was read are not lost.
//!
//! Units are handed out biggest table first, so a run that mixes one huge
//! table with many small ones ends with small units that fill the gaps.

use std::fmt;

use crate::catalog::Table;
use crate::identifier::quote_identifier;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Pointer pages per unit (at least 1).
    pub pages_per_unit: u32,
    /// Whether the server has `MAKE_DBKEY` (Firebird 4+); without it every
    /// table is one unit.
    pub split_tables: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            pages_per_unit: 1,
            split_tables: true,
        }
    }
}

/// One table's part of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePlan {
    pub name: String,
    pub relation_id: u16,
    /// Output column names, in catalog order.
    pub columns: Vec<String>,
    /// The Firebird type a column had before the query cast it (DECFLOAT).
    pub type_overrides: Vec<Option<String>>,
    pub pointer_pages: u32,
    pub unit_count: usize,
    select: String,
}

impl TablePlan {
    /// The query that reads `unit` of this table.
    pub fn unit_sql(&self, unit: &Unit) -> String {
        let key = |pp: u32| format!("MAKE_DBKEY({}, 0, 0, {pp})", self.relation_id);
        match (unit.first_page, unit.end_page) {
            (0, None) => self.select.clone(),
            (0, Some(end)) => format!("{} WHERE RDB$DB_KEY < {}", self.select, key(end)),
            (first, None) => format!("{} WHERE RDB$DB_KEY >= {}", self.select, key(first)),
            (first, Some(end)) => format!(
                "{} WHERE RDB$DB_KEY >= {} AND RDB$DB_KEY < {}",
                self.select,
                key(first),
                key(end)
            ),
        }
    }
}

/// A range of pointer pages of one table: the unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Index into [`Plan::tables`].
    pub table: usize,
    /// Position within the table; output is assembled in this order.
    pub seq: usize,
    pub first_page: u32,
    /// Exclusive; `None` for "to the end of the table".
    pub end_page: Option<u32>,
}

/// What to unload and in which pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub tables: Vec<TablePlan>,
    /// In dispatch order.
    pub units: Vec<Unit>,
}

impl Plan {
    pub fn new(catalog: &[Table], options: PlanOptions) -> Plan {
        let per_unit = options.pages_per_unit.max(1);
        let mut tables = Vec::with_capacity(catalog.len());
        let mut per_table_units = Vec::with_capacity(catalog.len());
        for (index, table) in catalog.iter().enumerate() {
            let units = if options.split_tables {
                split(index, table.pointer_pages, per_unit)
            } else {
                split(index, 0, per_unit)
            };
            tables.push(TablePlan {
                name: table.name.clone(),
                relation_id: table.relation_id,
                columns: table.columns.iter().map(|c| c.name.clone()).collect(),
                type_overrides: table
                    .columns
                    .iter()
                    .map(|c| c.decfloat_digits().map(|d| format!("DECFLOAT({d})")))
                    .collect(),
                pointer_pages: table.pointer_pages,
                unit_count: units.len(),
                select: select_list(table),
            });
            per_table_units.push(units);
        }
        // Biggest first; ties keep catalog (name) order.
        per_table_units.sort_by_key(|units| std::cmp::Reverse(units.len()));
        Plan {
            tables,
            units: per_table_units.into_iter().flatten().collect(),
        }
    }
}

fn split(table: usize, pointer_pages: u32, per_unit: u32) -> Vec<Unit> {
    if pointer_pages <= per_unit {
        return vec![Unit {
            table,
            seq: 0,
            first_page: 0,
            end_page: None,
        }];
    }
    let count = pointer_pages.div_ceil(per_unit);
    (0..count)
        .map(|i| Unit {
            table,
            seq: i as usize,
            first_page: i * per_unit,
            end_page: (i + 1 < count).then_some((i + 1) * per_unit),
        })
        .collect()
}

/// `SELECT <columns> FROM <table>`, with DECFLOAT columns cast to text:
/// the server's conversion is exact, and the client API has no decoder for
/// the IEEE 754 decimal encodings.
fn select_list(table: &Table) -> String {
    let columns: Vec<String> = table
        .columns
        .iter()
        .map(|c| {
            let q = quote_identifier(&c.name);
            if c.is_decfloat() {
                format!("CAST({q} AS VARCHAR(64)) AS {q}")
            } else {
                q
            }
        })
        .collect();
    format!("SELECT {} FROM {}", columns.join(", "), quote_identifier(&table.name))
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.tables.iter().map(|t| t.name.len()).max().unwrap_or(5).max(5);
        writeln!(f, "{:width$}  {:>13}  {:>6}  columns", "table", "pointer pages", "units")?;
        for t in &self.tables {
            writeln!(
                f,
                "{:width$}  {:>13}  {:>6}  {}",
                t.name,
                t.pointer_pages,
                t.unit_count,
                t.columns.len()
            )?;
        }
        write!(f, "{} tables, {} units", self.tables.len(), self.units.len())
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
                    precision: None,
                    scale: 0,
                },
                Column {
                    name: "Amount \"x\"".into(),
                    field_type: 25,
                    precision: Some(34),
                    scale: 0,
                },
            ],
            pointer_pages: pps,
        }
    }

    #[test]
    fn units_cover_every_page_once_with_open_ends() {
        for pps in 0..12 {
            for per_unit in 1..5 {
                let units = split(0, pps, per_unit);
                assert_eq!(units[0].first_page, 0);
                assert_eq!(units.last().unwrap().end_page, None);
                for pair in units.windows(2) {
                    assert_eq!(pair[0].end_page, Some(pair[1].first_page));
                }
                assert_eq!(units.len() as u32, pps.div_ceil(per_unit).max(1));
                assert!(units.iter().enumerate().all(|(i, u)| u.seq == i));
            }
        }
    }

    #[test]
    fn biggest_tables_are_dispatched_first() {
        let plan = Plan::new(
            &[table("SMALL", 130, 1), table("BIG", 131, 3), table("MID", 132, 2)],
            PlanOptions::default(),
        );
        let order: Vec<(usize, usize)> = plan.units.iter().map(|u| (u.table, u.seq)).collect();
        assert_eq!(order, vec![(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (0, 0)]);
    }

    #[test]
    fn unit_sql_uses_dbkey_ranges_and_quotes_names() {
        let plan = Plan::new(&[table("my table", 140, 3)], PlanOptions::default());
        let t = &plan.tables[0];
        assert_eq!(
            t.unit_sql(&plan.units[0]),
            "SELECT \"ID\", CAST(\"Amount \"\"x\"\"\" AS VARCHAR(64)) AS \"Amount \"\"x\"\"\" \
             FROM \"my table\" WHERE RDB$DB_KEY < MAKE_DBKEY(140, 0, 0, 1)"
        );
        assert!(t.unit_sql(&plan.units[1]).ends_with(
            "WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 0, 1) AND RDB$DB_KEY < MAKE_DBKEY(140, 0, 0, 2)"
        ));
        assert!(t.unit_sql(&plan.units[2]).ends_with("WHERE RDB$DB_KEY >= MAKE_DBKEY(140, 0, 0, 2)"));
        assert_eq!(t.type_overrides, vec![None, Some("DECFLOAT(34)".to_string())]);
    }

    #[test]
    fn without_make_dbkey_a_table_is_one_unit() {
        let plan = Plan::new(
            &[table("T", 140, 9)],
            PlanOptions {
                split_tables: false,
                ..Default::default()
            },
        );
        assert_eq!(plan.units.len(), 1);
        assert!(!plan.tables[0].unit_sql(&plan.units[0]).contains("WHERE"));
    }
}
