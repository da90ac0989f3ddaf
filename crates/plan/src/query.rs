//! `--query`: any SELECT, unloaded like a table at the run's snapshot.
//!
//! A query is one unit, read by one worker, unless it is split by the
//! DB_KEY ranges of its *driving table*: the table its top-level FROM
//! begins with. Each unit then reads the query with that one table
//! reference replaced by a derived table of the unit's rows,
//!
//! ```text
//! SELECT o.ID, c.NAME FROM ORDERS o JOIN CUSTOMERS c ON c.ID = o.CUST
//! SELECT o.ID, c.NAME FROM (SELECT * FROM "ORDERS" WHERE RDB$DB_KEY >= ...
//!     AND RDB$DB_KEY < ...) o JOIN CUSTOMERS c ON c.ID = o.CUST
//! ```
//!
//! which keeps the query's aliases and joins as written, and lets Firebird
//! read only those pages of the table. The units' rows together are the
//! query's rows only if every row of the result comes from one row of the
//! driving table, so a split query may not group, aggregate, sort, limit,
//! combine (UNION), use window functions or RIGHT/FULL joins outside its
//! subqueries: those are refused, not guessed at. "Outside its
//! subqueries" is decided on Firebird's own tokens ([`crate::sql_text`]),
//! not on words outside parentheses: `COALESCE(MAX(ID), 0)` aggregates
//! each unit as much as `MAX(ID)` does, while `(SELECT MAX(ID) FROM T)`
//! is one value for every unit.
//!
//! Before anything, the text is checked as a `--where` is: a quote,
//! comment or parenthesis that does not close in it, or a `;` (but for
//! trailing ones, which are dropped), is refused, and it must begin with SELECT (or WITH, unsplit). The run's
//! transaction is read-only, so a query cannot change a table; it could
//! still change a sequence (`GEN_ID(S, 1)`, `NEXT VALUE FOR S` work in a
//! read-only transaction), so those are refused too. What Firebird is
//! sent is the query with its comments blanked
//! ([`crate::sql_text::without_comments`]).

use fbunload_client::{sql_type, ClientError, ColumnDesc, Transaction};
use fbunload_decode::TextDecoder;

use crate::selection::Name;
use crate::sql_text::{
    refuse_sequence_changes, statement_tokens, without_comments, Token, TokenKind,
};

/// A `--query` as given: the name of its output, its SQL, and the table
/// whose DB_KEY ranges split it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuerySpec {
    pub name: String,
    pub sql: String,
    /// `--split-by`: a table name as in SQL (plain names are upper-cased,
    /// `"Odd"` is exact).
    pub split_by: Option<String>,
}

/// Why a query cannot be unloaded; every message names the query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// The first table of a split query's FROM, and the query around it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrivingTable {
    /// Its name in the catalog.
    pub table: String,
    before: String,
    after: String,
    /// The name the derived table takes where the query gives the table
    /// no alias: the table's name as written, so `ORDERS.ID` still means
    /// the same column.
    alias: Option<String>,
}

impl DrivingTable {
    /// The query with the driving table replaced by `rows`, a SELECT of
    /// some of its rows.
    pub fn with_rows(&self, rows: &str) -> String {
        let alias = self
            .alias
            .as_ref()
            .map(|a| format!(" {a}"))
            .unwrap_or_default();
        // The line break ends the user's text before fbunload's goes on.
        format!("{}\n({rows}){alias}{}", self.before, self.after)
    }

    /// The same, its text as fbunload sends it
    /// ([`crate::sql_text::for_the_engine`]).
    pub fn for_the_engine(self, literals: &fbunload_decode::TextDecoder) -> DrivingTable {
        DrivingTable {
            before: crate::sql_text::for_the_engine(&self.before, literals),
            after: crate::sql_text::for_the_engine(&self.after, literals),
            ..self
        }
    }
}

/// Words that would apply to each unit apart, not to the whole result,
/// outside a split query's subqueries. `DISTINCT` after `IS` or `IS NOT`
/// is a comparison, and `RIGHT`/`FULL` are refused only before `JOIN` or
/// `OUTER` (`RIGHT(name, 3)` is a function).
const PER_UNIT_WORDS: &[&str] = &[
    "DISTINCT",
    "GROUP",
    "HAVING",
    "ORDER",
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "FIRST",
    "SKIP",
    "ROWS",
    "FETCH",
    "OFFSET",
    "OVER",
    "WINDOW",
    "RIGHT",
    "FULL",
    "PLAN",
];

/// Firebird 5's aggregate functions (`aggregate_function` in its
/// grammar): outside a split query's subqueries each unit would
/// aggregate its own rows. Window functions need `OVER`, refused above.
const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "LIST",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VAR_POP",
    "VAR_SAMP",
    "COVAR_POP",
    "COVAR_SAMP",
    "CORR",
    "REGR_AVGX",
    "REGR_AVGY",
    "REGR_COUNT",
    "REGR_INTERCEPT",
    "REGR_R2",
    "REGR_SLOPE",
    "REGR_SXX",
    "REGR_SXY",
    "REGR_SYY",
];

/// What may follow a table's name in a FROM other than an alias.
const AFTER_TABLE: &[&str] = &[
    "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "WHERE", "GROUP", "HAVING",
    "WINDOW", "PLAN", "UNION", "ORDER", "ROWS", "OFFSET", "FETCH", "FOR", "WITH",
];

/// Checks every query and that their names are usable and distinct;
/// returns each one's driving table, if split.
pub fn check_queries(specs: &[QuerySpec]) -> Result<Vec<Option<DrivingTable>>, QueryError> {
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|other| other.name == spec.name) {
            return Err(QueryError(format!(
                "--name {} is given to two queries; give each query a name of its own",
                crate::printable(&spec.name)
            )));
        }
    }
    specs.iter().map(check_query).collect()
}

/// Checks one query's name and text; with `split_by`, that it can be
/// split, and where its driving table is.
pub fn check_query(spec: &QuerySpec) -> Result<Option<DrivingTable>, QueryError> {
    let refuse = |why: String| {
        Err(QueryError(format!(
            "--query {}: {why}",
            crate::printable(&spec.name)
        )))
    };
    if spec.name.trim().is_empty() {
        return Err(QueryError(
            "--name is empty; name each query (its file is NAME.csv)".into(),
        ));
    }
    let tokens = match statement_tokens(&spec.sql, "the query") {
        Ok(tokens) => tokens,
        Err(why) => return refuse(why),
    };
    let first = tokens[0];
    if !(first.is_word("SELECT") || first.is_word("WITH")) {
        return refuse(format!(
            "only a SELECT can be unloaded, and this begins with {}",
            crate::printable(first.text)
        ));
    }
    if let Err(why) = refuse_sequence_changes(&tokens) {
        return refuse(why);
    }
    let Some(split_by) = &spec.split_by else {
        return Ok(None);
    };
    let Some(wanted) = Name::parse(split_by) else {
        return refuse(format!(
            "--split-by {}: not a table name (quote a name with other characters: \"Odd name\")",
            crate::printable(split_by)
        ));
    };
    // Blanking keeps every byte where it was, so the tokens still point
    // into it.
    let sent = without_comments(&spec.sql);
    match driving_table(&sent, &tokens, &wanted) {
        Ok(driving) => Ok(Some(driving)),
        Err(why) => refuse(format!("--split-by {wanted}: {why}")),
    }
}

/// Finds the driving table of a split query (module docs).
fn driving_table(sql: &str, tokens: &[Token<'_>], wanted: &Name) -> Result<DrivingTable, String> {
    if !tokens[0].is_word("SELECT") {
        return Err("a split query must begin with SELECT (not WITH)".into());
    }
    if let Some(word) = per_unit_word(tokens) {
        return Err(format!(
            "{word} at the query's top level (outside its subqueries) would apply to each unit \
             apart, not to the whole result; leave out --split-by to read the query as one unit"
        ));
    }
    let top: Vec<(usize, &Token<'_>)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| t.depth == 0)
        .collect();
    let from = top
        .iter()
        .position(|(_, t)| t.is_word("FROM"))
        .ok_or("the query has no FROM")?;
    let named = top
        .get(from + 1)
        .map(|(_, t)| **t)
        .filter(|t| matches!(t.kind, TokenKind::Word | TokenKind::QuotedName))
        .filter(|_| top.get(from + 2).map(|(_, n)| n.text) != Some("."));
    let Some(named) = named else {
        return Err("the query's FROM must begin with that table's name".into());
    };
    let table = match named.kind {
        TokenKind::QuotedName => named.text[1..named.text.len() - 1].replace("\"\"", "\""),
        _ => named.text.to_uppercase(),
    };
    if !wanted.matches(&table) {
        let hint = wanted.hint(std::slice::from_ref(&table), |name| {
            format!("--split-by {}", crate::identifier::shell_word(name))
        });
        return Err(format!(
            "the query's FROM must begin with that table, and it begins with {}{hint}",
            crate::printable(named.text)
        ));
    }
    let has_alias = top.get(from + 2).is_some_and(|(_, next)| match next.kind {
        TokenKind::QuotedName => true,
        TokenKind::Word => !AFTER_TABLE.iter().any(|w| next.is_word(w)),
        _ => false,
    });
    Ok(DrivingTable {
        table,
        before: sql[..named.start].to_string(),
        after: sql[named.end()..].to_string(),
        alias: (!has_alias).then(|| named.text.to_string()),
    })
}

/// The first word outside the query's subqueries that would make each
/// unit's rows something else than its part of the result, upper-cased.
fn per_unit_word(tokens: &[Token<'_>]) -> Option<String> {
    let is = |i: Option<usize>, word: &str| {
        i.and_then(|i| tokens.get(i))
            .is_some_and(|t: &Token<'_>| t.is_word(word))
    };
    let next_is_open = |i: usize| tokens.get(i + 1).map(|t| t.kind) == Some(TokenKind::Open);
    tokens.iter().enumerate().find_map(|(i, token)| {
        if token.in_subquery || token.kind != TokenKind::Word {
            return None;
        }
        let word = token.text.to_ascii_uppercase();
        let per_unit = match word.as_str() {
            // IS [NOT] DISTINCT FROM compares two values.
            "DISTINCT" => {
                !(is(i.checked_sub(1), "IS")
                    || (is(i.checked_sub(1), "NOT") && is(i.checked_sub(2), "IS")))
            }
            "RIGHT" | "FULL" => is(Some(i + 1), "JOIN") || is(Some(i + 1), "OUTER"),
            w if PER_UNIT_WORDS.contains(&w) => true,
            w => AGGREGATES.contains(&w) && next_is_open(i),
        };
        per_unit.then_some(word)
    })
}

/// What the server describes for a query's columns, after preparing it;
/// `subject` names it while the server prepares it (`view V`, `query Q`).
pub fn describe(
    tr: &Transaction,
    subject: &str,
    sql: &str,
) -> Result<Vec<ColumnDesc>, ClientError> {
    Ok(tr.prepare_for(subject, sql)?.columns().to_vec())
}

/// The names of a query's columns as the server describes them (at most
/// 31 bytes: the client API's limit). Two may have one name (`SELECT 1,
/// 2` gives two `CONSTANT`s), as Arrow results allow; files need distinct
/// ones ([`unique_column_names`]).
pub fn column_names(columns: &[ColumnDesc]) -> Vec<String> {
    let named = |(i, column): (usize, &ColumnDesc)| match column.name.as_str() {
        "" => format!("COLUMN{}", i + 1),
        name => name.to_string(),
    };
    columns.iter().enumerate().map(named).collect()
}

/// Refuses a query of the plan with two columns of one name: JSON Lines,
/// Parquet and a CSV header need distinct ones, so only a file output
/// asks this (Arrow record batches take them as they are).
pub fn unique_column_names(plan: &crate::Plan) -> Result<(), QueryError> {
    for table in plan.tables.iter().filter(|t| t.kind == crate::Kind::Query) {
        for (i, name) in table.columns.iter().enumerate() {
            if table.columns[..i].contains(name) {
                return Err(QueryError(format!(
                    "--query {}: two columns are named {}; give them names of their own with AS",
                    crate::printable(&table.name),
                    crate::printable(name)
                )));
            }
        }
    }
    Ok(())
}

/// The type each described column must be cast to by the server before
/// fbunload can read it, if any: DECFLOAT to text (exact), text in a
/// character set the client cannot decode to UTF8 (as tables' columns
/// are, see the planner).
pub fn server_casts(columns: &[ColumnDesc]) -> Vec<Option<String>> {
    const UTF8_BLOB: &str = "BLOB SUB_TYPE TEXT CHARACTER SET UTF8";
    // The longest UTF8 VARCHAR: 32,765 bytes at 4 a character.
    const UTF8_CHARS: u16 = 8191;
    columns
        .iter()
        .map(|c| match c.sql_type {
            sql_type::DEC16 | sql_type::DEC34 => Some("VARCHAR(64)".into()),
            sql_type::TEXT | sql_type::VARYING if !TextDecoder::client_reads(c.charset_id()) => {
                // A length in bytes is at least the length in characters.
                let kind = if c.sql_type == sql_type::TEXT {
                    "CHAR"
                } else {
                    "VARCHAR"
                };
                Some(match c.length {
                    n if n <= UTF8_CHARS => format!("{kind}({n}) CHARACTER SET UTF8"),
                    _ => UTF8_BLOB.into(),
                })
            }
            sql_type::BLOB if c.subtype == 1 && !TextDecoder::client_reads(c.scale as u8) => {
                Some(UTF8_BLOB.into())
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sql: &str, split_by: Option<&str>) -> QuerySpec {
        QuerySpec {
            name: "Q".into(),
            sql: sql.into(),
            split_by: split_by.map(str::to_string),
        }
    }

    fn split(sql: &str, table: &str) -> Result<DrivingTable, String> {
        check_query(&spec(sql, Some(table)))
            .map(Option::unwrap)
            .map_err(|e| e.0)
    }

    #[test]
    fn the_driving_table_is_replaced_by_its_rows_keeping_aliases() {
        let rows = "SELECT * FROM \"ORDERS\" WHERE RDB$DB_KEY < x";
        let d = split(
            "SELECT o.ID, c.NAME FROM orders o JOIN CUSTOMERS c ON c.ID = o.CUST",
            "ORDERS",
        )
        .unwrap();
        assert_eq!(d.table, "ORDERS");
        assert_eq!(
            d.with_rows(rows),
            format!("SELECT o.ID, c.NAME FROM \n({rows}) o JOIN CUSTOMERS c ON c.ID = o.CUST")
        );
        // No alias: the table's name as written becomes one.
        let d = split(
            "select ORDERS.ID from ORDERS\nwhere ORDERS.ID > 1",
            "orders",
        )
        .unwrap();
        assert_eq!(
            d.with_rows(rows),
            format!("select ORDERS.ID from \n({rows}) ORDERS\nwhere ORDERS.ID > 1")
        );
        let d = split(
            "SELECT * FROM \"Odd \"\"t\"\"\" AS x, B",
            "\"Odd \"\"t\"\"\"",
        )
        .unwrap();
        assert_eq!(d.table, "Odd \"t\"");
        assert_eq!(d.with_rows("R"), "SELECT * FROM \n(R) AS x, B");
        let d = split("SELECT * FROM T LEFT JOIN U ON 1=1", "T").unwrap();
        assert_eq!(d.with_rows("R"), "SELECT * FROM \n(R) T LEFT JOIN U ON 1=1");
        // Subqueries, function syntax and strings with FROM do not count.
        let d = split(
            "SELECT EXTRACT(YEAR FROM d), (SELECT MAX(x) FROM U), 'FROM U' FROM T",
            "T",
        )
        .unwrap();
        assert!(d.with_rows("R").ends_with("'FROM U' FROM \n(R) T"));
        // The text around the table is sent with its comments blanked.
        let d = split("SELECT ID -- x\rFROM T /* ) */ WHERE ID > 0", "T").unwrap();
        assert_eq!(
            d.with_rows("R"),
            "SELECT ID     \rFROM \n(R) T         WHERE ID > 0"
        );
    }

    #[test]
    fn aggregates_and_window_functions_are_refused_wherever_they_are_outside_subqueries() {
        for (sql, word) in [
            ("SELECT COALESCE(MAX(ID), 0) FROM T", "MAX"),
            ("SELECT CAST(COUNT(*) AS BIGINT) FROM T", "COUNT"),
            ("SELECT (COUNT(*)) FROM T", "COUNT"),
            ("SELECT REGR_COUNT(ID, ID) FROM T", "REGR_COUNT"),
            ("SELECT regr_syy (ID, ID) FROM T", "REGR_SYY"),
            ("SELECT 1 + corr(ID, ID) FROM T", "CORR"),
            ("SELECT (ROW_NUMBER() OVER (ORDER BY ID)) FROM T", "OVER"),
            (
                "SELECT COALESCE(LAG(ID) OVER (ORDER BY ID), -1) FROM T",
                "OVER",
            ),
            ("SELECT ID FROM T HAVING (SUM(ID) > 0)", "HAVING"),
            ("SELECT ID FROM T WHERE ID > 0 ORDER BY (1)", "ORDER"),
            (
                "SELECT ID FROM T WHERE (ID = (SELECT 1 FROM U)) OR MAX(ID) > 0",
                "MAX",
            ),
            ("SELECT ID FROM T --\rROWS 3", "ROWS"),
            ("SELECT ID FROM T RIGHT OUTER JOIN U ON 1=1", "RIGHT"),
            ("SELECT ID FROM T FULL JOIN U ON 1=1", "FULL"),
            ("SELECT DISTINCT ID FROM T", "DISTINCT"),
            (
                "SELECT ID FROM T WHERE ID IS NOT DISTINCT FROM 1 AND COUNT(*) > 0",
                "COUNT",
            ),
        ] {
            let err = split(sql, "T").unwrap_err();
            assert!(
                err.contains(&format!("{word} at the query's top level")),
                "{sql}: {err}"
            );
            assert!(err.contains("leave out --split-by"), "{err}");
        }
        for sql in [
            "SELECT ID, RIGHT(A, 3), LEFT(A, 1) FROM T",
            "SELECT ID FROM T WHERE A IS DISTINCT FROM B OR A IS NOT DISTINCT FROM C",
            "SELECT (SELECT COALESCE(MAX(ID), 0) FROM U), ID FROM T",
            "SELECT ID FROM T WHERE ID IN ((SELECT MAX(ID) FROM U))",
            "SELECT ID FROM T LEFT JOIN (SELECT ID, COUNT(*) C FROM U GROUP BY ID) u ON u.ID = T.ID",
            "SELECT ID FROM T WHERE EXISTS (WITH X AS (SELECT 1 A FROM U) SELECT COUNT(*) FROM X)",
            "SELECT ID, 'MAX(ID)', \"COUNT\" FROM T -- ORDER BY 1",
        ] {
            assert!(split(sql, "T").is_ok(), "{sql}: {:?}", split(sql, "T"));
        }
    }

    #[test]
    fn queries_that_would_change_a_sequence_are_refused_split_or_not() {
        for split_by in [None, Some("T")] {
            for sql in [
                "SELECT GEN_ID(S, 1) FROM T",
                "SELECT ID FROM T WHERE ID < (SELECT NEXT VALUE FOR S FROM RDB$DATABASE)",
            ] {
                let err = check_query(&spec(sql, split_by)).unwrap_err().0;
                assert!(err.starts_with("--query Q: "), "{err}");
                assert!(err.contains("changes a sequence"), "{sql}: {err}");
            }
            assert!(check_query(&spec("SELECT GEN_ID(S, 0) FROM T", split_by)).is_ok());
        }
    }

    #[test]
    fn what_cannot_be_split_is_refused_with_the_reason() {
        for (sql, table, why) in [
            ("SELECT * FROM U JOIN T ON 1=1", "T", "it begins with U"),
            (
                "SELECT * FROM (SELECT * FROM T) x",
                "T",
                "must begin with that table",
            ),
            (
                "SELECT COUNT(*) FROM T",
                "T",
                "COUNT at the query's top level",
            ),
            ("SELECT DISTINCT A FROM T", "T", "DISTINCT at"),
            ("SELECT A FROM T GROUP BY A", "T", "GROUP at"),
            ("SELECT A FROM T ORDER BY A", "T", "ORDER at"),
            ("SELECT FIRST 5 A FROM T", "T", "FIRST at"),
            ("SELECT A FROM T UNION SELECT A FROM U", "T", "UNION at"),
            ("SELECT ROW_NUMBER() OVER () FROM T", "T", "OVER at"),
            ("SELECT * FROM T RIGHT JOIN U ON 1=1", "T", "RIGHT at"),
            (
                "WITH X AS (SELECT 1 FROM T) SELECT * FROM X",
                "X",
                "must begin with SELECT",
            ),
            ("SELECT 1", "T", "no FROM"),
            ("SELECT * FROM T", "A B", "not a table name"),
            // Names follow SQL: unquoted upper case, quoted exact.
            (
                "SELECT * FROM \"t\"",
                "t",
                "begins with \"t\" (unquoted names are upper-cased, as in SQL: did you mean \
                 \"t\"? --split-by '\"t\"')",
            ),
            (
                "SELECT * FROM t",
                "\"t\"",
                "(a quoted name is exact: did you mean T? --split-by T)",
            ),
        ] {
            let err = split(sql, table).unwrap_err();
            assert!(err.contains(why), "{sql}: {err}");
            assert!(err.starts_with("--query Q: "), "{err}");
        }
        // Inside a subquery they are fine.
        assert!(split(
            "SELECT A, (SELECT MAX(B) FROM U) FROM T WHERE A IN (SELECT A FROM U GROUP BY A)",
            "T"
        )
        .is_ok());
        // A column that merely shares a name with an aggregate is fine too.
        assert!(split("SELECT COUNT FROM T", "T").is_ok());
    }

    #[test]
    fn only_one_select_in_one_piece_is_taken() {
        for (sql, why) in [
            (
                "DELETE FROM T",
                "only a SELECT can be unloaded, and this begins with DELETE",
            ),
            ("EXECUTE BLOCK AS BEGIN END", "begins with EXECUTE"),
            ("SELECT 1 FROM T; DELETE FROM T", "a ; ends the statement"),
            ("SELECT 'x FROM T", "a quote is not closed"),
            ("SELECT (1 FROM T", "a ( is not closed"),
            ("SELECT 1 FROM T /*", "comment is not closed"),
            ("  ", "the query is empty"),
        ] {
            let err = check_query(&spec(sql, None)).unwrap_err().0;
            assert!(err.contains(why), "{sql}: {err}");
        }
        assert_eq!(
            check_query(&spec(
                "with x as (select 1 a from rdb$database) select * from x",
                None
            )),
            Ok(None)
        );
        // Trailing semicolons (and what follows them but blanks and
        // comments) end the statement as in a script: dropped, not sent.
        for sql in [
            "SELECT 1 FROM T;",
            "SELECT 1 FROM T ; ;;\n",
            "SELECT 1 FROM T;; -- done",
        ] {
            assert_eq!(check_query(&spec(sql, None)), Ok(None), "{sql}");
            assert!(!without_comments(sql).contains(';'), "{sql}");
        }
        let split = check_query(&spec("SELECT A FROM T x;;", Some("T")));
        assert!(!split.unwrap().unwrap().with_rows("R").contains(';'));
        assert!(check_query(&spec("SELECT 1 FROM T;; SELECT 2 FROM T", None)).is_err());
        assert!(check_query(&spec(";", None)).is_err());
        let twice = [spec("SELECT 1 FROM T", None), spec("SELECT 2 FROM T", None)];
        assert!(check_queries(&twice)
            .unwrap_err()
            .0
            .contains("--name Q is given to two queries"));
        let unnamed = QuerySpec {
            name: " ".into(),
            ..spec("SELECT 1 FROM T", None)
        };
        assert!(check_query(&unnamed)
            .unwrap_err()
            .0
            .contains("--name is empty"));
    }

    fn desc(name: &str, sql_type: i16, subtype: i16, scale: i16, length: u16) -> ColumnDesc {
        ColumnDesc {
            name: name.into(),
            sql_type,
            scale,
            subtype,
            length,
            nullable: true,
        }
    }

    #[test]
    fn the_server_casts_what_the_client_cannot_read() {
        let columns = [
            desc("D", sql_type::DEC34, 0, 0, 16),
            desc("U", sql_type::VARYING, 4, 0, 40),
            desc("DOS", sql_type::TEXT, 10, 0, 10),
            desc("LONG", sql_type::VARYING, 10, 0, 20000),
            desc("B", sql_type::BLOB, 1, 10, 8),
            desc("I", sql_type::LONG, 0, 0, 4),
        ];
        assert_eq!(
            server_casts(&columns),
            [
                Some("VARCHAR(64)".into()),
                None,
                Some("CHAR(10) CHARACTER SET UTF8".into()),
                Some("BLOB SUB_TYPE TEXT CHARACTER SET UTF8".into()),
                Some("BLOB SUB_TYPE TEXT CHARACTER SET UTF8".into()),
                None,
            ]
        );
        assert_eq!(column_names(&columns[..2]), ["D", "U"]);
        assert_eq!(column_names(&[desc("", 496, 0, 0, 4)]), ["COLUMN1"]);
        // Arrow takes two of one name; a file output refuses them.
        let twice = [desc("ID", 496, 0, 0, 4), desc("ID", 496, 0, 0, 4)];
        assert_eq!(column_names(&twice), ["ID", "ID"]);
        let read = |columns: Vec<String>| crate::Read {
            name: "Q".into(),
            kind: crate::Kind::Query,
            sql: "SELECT ID, ID FROM T".into(),
            declared_types: vec!["INTEGER".into(); columns.len()],
            casts: vec![None; columns.len()],
            columns,
            driving: None,
        };
        let options = crate::PlanOptions::default();
        let plan =
            |columns| crate::Plan::new(&[], options).with_reads(vec![read(columns)], options);
        assert!(unique_column_names(&plan(column_names(&twice)))
            .unwrap_err()
            .0
            .contains("--query Q: two columns are named ID"));
        assert_eq!(
            unique_column_names(&plan(column_names(&columns[..2]))),
            Ok(())
        );
    }
}
