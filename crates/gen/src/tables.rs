//! The tables the generator knows, and parsing of `--tables` lists.
//!
//! Tables are always created and filled in the order of [`Table::ALL`],
//! whatever order the user listed them in: the physical layout of the
//! database file (and so what an unloader reads first) then depends only on
//! which tables were chosen.

use std::fmt;

/// One table the generator can create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Warehouse,
    District,
    Customer,
    Item,
    Stock,
    Orders,
    OrderLine,
    AllTypes,
    /// The table with a quoted, mixed-case name containing spaces and
    /// double quotes: `"Mixed Case ""Quoted"""`.
    Mixed,
    EmptyTable,
    /// An ARRAY column of each element type, one and two dimensions, odd
    /// bounds ([`crate::arrays`]).
    ArrayTypes,
    /// Two blobs of [`crate::GenOptions::blob_mb`] MiB each, for memory
    /// measurements ([`crate::blobs`]); never part of `ALL`.
    BigBlob,
    /// Many rows of medium blobs, [`crate::GenOptions::blob_total_mb`] MiB
    /// in all ([`crate::heavy`]); never part of `ALL`.
    BlobHeavy,
    /// [`crate::GenOptions::wide_columns`] columns of mixed types
    /// ([`crate::heavy`]); never part of `ALL`.
    Wide,
}

impl Table {
    /// Every table `ALL` stands for, in creation order.
    pub const ALL: [Table; 11] = [
        Table::Warehouse,
        Table::District,
        Table::Customer,
        Table::Item,
        Table::Stock,
        Table::Orders,
        Table::OrderLine,
        Table::AllTypes,
        Table::Mixed,
        Table::EmptyTable,
        Table::ArrayTypes,
    ];

    /// Tables made only when named: too big for a default database.
    pub const ON_REQUEST: [Table; 3] = [Table::BigBlob, Table::BlobHeavy, Table::Wide];

    /// The name used on the command line (and, except for [`Table::Mixed`],
    /// the table's name in the database).
    pub fn cli_name(self) -> &'static str {
        match self {
            Table::Warehouse => "WAREHOUSE",
            Table::District => "DISTRICT",
            Table::Customer => "CUSTOMER",
            Table::Item => "ITEM",
            Table::Stock => "STOCK",
            Table::Orders => "ORDERS",
            Table::OrderLine => "ORDER_LINE",
            Table::AllTypes => "ALL_TYPES",
            Table::Mixed => "MIXED",
            Table::EmptyTable => "EMPTY_TABLE",
            Table::ArrayTypes => "ARRAY_TYPES",
            Table::BigBlob => "BIG_BLOB",
            Table::BlobHeavy => "BLOB_HEAVY",
            Table::Wide => "WIDE",
        }
    }

    /// The table's name as stored in `RDB$RELATIONS.RDB$RELATION_NAME`.
    pub fn db_name(self) -> &'static str {
        match self {
            Table::Mixed => crate::special::MIXED_NAME,
            other => other.cli_name(),
        }
    }

    /// The name as it must be written in SQL (quoted when needed).
    pub fn sql_name(self) -> String {
        match self {
            Table::Mixed => crate::sql::quote_ident(crate::special::MIXED_NAME),
            other => other.cli_name().to_string(),
        }
    }

    /// Parses one command-line name, case-insensitively.
    pub fn parse(name: &str) -> Option<Table> {
        let wanted = name.trim();
        Table::ALL
            .into_iter()
            .chain(Table::ON_REQUEST)
            .find(|t| t.cli_name().eq_ignore_ascii_case(wanted))
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cli_name())
    }
}

/// Parses a comma-separated list such as `STOCK,item`. `ALL` (alone) means
/// every table. The result is deduplicated and in creation order.
pub fn parse_table_list(list: &str) -> Result<Vec<Table>, String> {
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    if names.iter().all(|n| n.is_empty()) {
        return Err("the table list is empty".into());
    }
    if names.len() == 1 && names[0].eq_ignore_ascii_case("ALL") {
        return Ok(Table::ALL.to_vec());
    }
    let mut tables = Vec::new();
    for name in names {
        if name.is_empty() {
            return Err(format!("empty name in table list {list:?}"));
        }
        let table = Table::parse(name).ok_or_else(|| {
            let known: Vec<&str> = Table::ALL
                .iter()
                .chain(&Table::ON_REQUEST)
                .map(|t| t.cli_name())
                .collect();
            format!("unknown table {name:?} (known: {})", known.join(", "))
        })?;
        tables.push(table);
    }
    tables.sort();
    tables.dedup();
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Table::ALL.into_iter().chain(Table::ON_REQUEST) {
            assert_eq!(Table::parse(t.cli_name()), Some(t));
            assert_eq!(Table::parse(&t.cli_name().to_lowercase()), Some(t));
        }
        assert_eq!(Table::parse("order_line"), Some(Table::OrderLine));
        assert_eq!(Table::parse("nope"), None);
    }

    #[test]
    fn lists_are_sorted_into_creation_order_and_deduplicated() {
        assert_eq!(
            parse_table_list("STOCK,item").unwrap(),
            vec![Table::Item, Table::Stock]
        );
        assert_eq!(
            parse_table_list(" empty_table , ALL_TYPES,EMPTY_TABLE").unwrap(),
            vec![Table::AllTypes, Table::EmptyTable]
        );
        assert_eq!(parse_table_list("all").unwrap(), Table::ALL.to_vec());
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(parse_table_list("").is_err());
        assert!(parse_table_list(" , ").is_err());
        assert!(parse_table_list("STOCK,,ITEM").is_err());
        let err = parse_table_list("STOCK,NEW_ORDER").unwrap_err();
        assert!(
            err.contains("NEW_ORDER") && err.contains("ORDER_LINE"),
            "{err}"
        );
        // ALL mixed with names is ambiguous, not a shorthand.
        assert!(parse_table_list("ALL,STOCK").is_err());
    }

    #[test]
    fn the_mixed_table_is_quoted_in_sql() {
        assert_eq!(Table::Mixed.sql_name(), "\"Mixed Case \"\"Quoted\"\"\"");
        assert_eq!(Table::Mixed.db_name(), "Mixed Case \"Quoted\"");
        assert_eq!(Table::Stock.sql_name(), "STOCK");
    }
}
