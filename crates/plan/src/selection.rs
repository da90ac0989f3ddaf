//! What to read of each table: which columns (`--columns`) and which rows
//! (`--where`).
//!
//! A row condition is ANDed to every unit's DB_KEY range, so a filtered
//! unload keeps its parallel units and stays byte-identical for any
//! `--parallel`. That only holds if the condition cannot escape its
//! parentheses: `1=1) OR (1=1` would make every unit read the whole table.
//! [`check_condition`] refuses a condition whose parentheses, quotes or
//! comments do not close inside it, as Firebird's own lexer reads them
//! (a `--` comment ends at a CR as well as an LF). The query then holds
//! it with its comments blanked out, on lines of its own, so that even a
//! comment the two read differently could not reach past it.
//!
//! Names follow SQL, as every option's do (see [`crate::identifier`]): an
//! unquoted name is upper-cased (`s_i_id` is `S_I_ID`), a double-quoted
//! one is taken as written (`"Odd, name"`).

use std::fmt;

use crate::catalog::Table;
use crate::identifier::{case_hint, is_plain_name, shell_word, unquoted};

/// One `--columns` or `--where` argument: for one table, or (without a
/// table name) for the only table selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableChoice {
    /// The table it names before a `:`, if any.
    pub table: Option<Name>,
    pub what: Choice,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Columns(Vec<Name>),
    Condition(String),
}

/// A name as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// Unquoted: compared upper-cased, as Firebird does.
    Plain(String),
    /// Double-quoted: compared exactly.
    Quoted(String),
}

impl Name {
    /// Parses one name, plain or double-quoted, and nothing after it.
    pub fn parse(text: &str) -> Option<Name> {
        let text = text.trim();
        if let Some(quoted) = text.strip_prefix('"') {
            let (name, used) = read_quoted(quoted)?;
            return (used == quoted.len()).then_some(Name::Quoted(name));
        }
        is_plain_name(text).then(|| Name::Plain(text.to_string()))
    }

    /// The name it stands for: upper-cased unless quoted.
    pub fn stored(&self) -> String {
        match self {
            Name::Plain(name) => unquoted(name),
            Name::Quoted(name) => name.clone(),
        }
    }

    pub fn matches(&self, stored: &str) -> bool {
        match self {
            Name::Plain(name) => unquoted(name) == stored,
            Name::Quoted(name) => name == stored,
        }
    }

    /// A hint when it names none of `existing` but one differs only in
    /// case, with what to type (see [`case_hint`]).
    pub fn hint(&self, existing: &[String], typed: impl Fn(&str) -> String) -> String {
        let folded = self.stored().to_lowercase();
        existing
            .iter()
            .find(|e| e.to_lowercase() == folded)
            .map(|other| case_hint(other, matches!(self, Name::Quoted(_)), typed))
            .unwrap_or_default()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Name::Plain(name) => write!(f, "{}", crate::printable(name)),
            Name::Quoted(name) => write!(f, "\"{}\"", crate::printable(name)),
        }
    }
}

/// Why a selection cannot be applied; every message names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectionError(pub String);

fn error(message: String) -> SelectionError {
    SelectionError(message)
}

/// Splits `TABLE:rest`, where TABLE is a plain or quoted name; `None` when
/// the text does not start with a name and a colon.
fn split_table(text: &str) -> Option<(Name, &str)> {
    let text_start = text.trim_start();
    if let Some(quoted) = text_start.strip_prefix('"') {
        let (name, used) = read_quoted(quoted)?;
        let rest = quoted[used..].trim_start().strip_prefix(':')?;
        return Some((Name::Quoted(name), rest));
    }
    let colon = text_start.find(':')?;
    let name = text_start[..colon].trim();
    is_plain_name(name).then(|| (Name::Plain(name.to_string()), &text_start[colon + 1..]))
}

/// Reads a quoted name after its opening quote: the name and the bytes
/// used, closing quote included.
fn read_quoted(text: &str) -> Option<(String, usize)> {
    let mut name = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            if chars.peek().map(|&(_, c)| c) == Some('"') {
                chars.next();
                name.push('"');
            } else {
                return Some((name, i + 1));
            }
        } else {
            name.push(c);
        }
    }
    None
}

/// Parses `--columns [TABLE:]COL,COL,...`.
pub fn parse_columns(argument: &str) -> Result<TableChoice, SelectionError> {
    // A line break in a message would break its one line.
    let shown = crate::printable(argument);
    let (table, list) = match split_table(argument) {
        Some((table, rest)) => (Some(table), rest),
        None => (None, argument),
    };
    let mut columns = Vec::new();
    let mut rest = list.trim_start();
    loop {
        let (name, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let (name, used) = read_quoted(quoted).ok_or_else(|| {
                error(format!("--columns '{shown}': a quoted name is not closed"))
            })?;
            (Name::Quoted(name), &quoted[used..])
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            (Name::Plain(rest[..end].trim().to_string()), &rest[end..])
        };
        match &name {
            Name::Plain(n) if n.is_empty() => {
                return Err(error(format!(
                    "--columns '{shown}': an empty column name; write COL,COL or \
                     TABLE:COL,COL"
                )))
            }
            Name::Plain(n) if !is_plain_name(n) => {
                return Err(error(format!(
                    "--columns '{shown}': {n} is not a plain name; put a name with other \
                     characters in double quotes: \"{n}\""
                )))
            }
            _ => {}
        }
        columns.push(name);
        let after = after.trim_start();
        match after.strip_prefix(',') {
            Some(next) => rest = next.trim_start(),
            None if after.is_empty() => break,
            None => {
                return Err(error(format!(
                    "--columns '{shown}': expected a comma after {}",
                    columns.last().expect("just pushed")
                )))
            }
        }
    }
    Ok(TableChoice {
        table,
        what: Choice::Columns(columns),
    })
}

/// Parses `--where [TABLE:]CONDITION`. A condition that itself starts
/// with `NAME:` can be given for the only table with an empty table part
/// (`--where ':X = 1'`) — rarely needed, since SQL conditions seldom do.
pub fn parse_condition(argument: &str) -> Result<TableChoice, SelectionError> {
    let (table, condition) = match argument.trim_start().strip_prefix(':') {
        Some(condition) => (None, condition),
        None => match split_table(argument) {
            Some((table, rest)) => (Some(table), rest),
            None => (None, argument),
        },
    };
    let condition = condition.trim();
    check_condition(condition).map_err(|why| {
        // A line break in a message would break its one line.
        let shown = crate::printable(argument);
        error(format!("--where '{shown}': {why}"))
    })?;
    Ok(TableChoice {
        table,
        what: Choice::Condition(condition.to_string()),
    })
}

/// Refuses a condition that could change the query around it: empty, or
/// with a parenthesis, string, quoted name or comment that does not close
/// inside it (as Firebird's lexer sees them, see [`crate::sql_text`]), or
/// a `;`; and one that would change a sequence.
pub fn check_condition(condition: &str) -> Result<(), String> {
    let tokens = crate::sql_text::balanced_tokens(condition, "the condition")?;
    crate::sql_text::refuse_sequence_changes(&tokens)
}

/// Applies the choices to the selected tables: each table's columns
/// become the chosen ones, in the order given; returns each table's row
/// condition, in catalog order.
pub fn apply(
    choices: &[TableChoice],
    catalog: &mut [Table],
) -> Result<Vec<Option<String>>, SelectionError> {
    let mut conditions: Vec<Option<String>> = vec![None; catalog.len()];
    let mut chosen_columns = vec![false; catalog.len()];
    for choice in choices {
        let option = match choice.what {
            Choice::Columns(_) => "--columns",
            Choice::Condition(_) => "--where",
        };
        let index = target(choice, option, catalog)?;
        let table = &mut catalog[index];
        match &choice.what {
            Choice::Columns(names) => {
                if std::mem::replace(&mut chosen_columns[index], true) {
                    return Err(error(format!(
                        "{option}: table {} is named twice; give its columns once",
                        crate::printable(&table.name)
                    )));
                }
                let mut columns = Vec::with_capacity(names.len());
                for name in names {
                    let Some(column) = table.columns.iter().find(|c| name.matches(&c.name)) else {
                        let known: Vec<_> = table
                            .columns
                            .iter()
                            .map(|c| crate::printable(&c.name).into_owned())
                            .collect();
                        let stored: Vec<String> =
                            table.columns.iter().map(|c| c.name.clone()).collect();
                        let hint = name.hint(&stored, |n| format!("write {n}"));
                        return Err(error(format!(
                            "{option}: table {} has no column {name}{hint}; its columns are {}",
                            crate::printable(&table.name),
                            known.join(", ")
                        )));
                    };
                    if columns
                        .iter()
                        .any(|c: &crate::Column| c.name == column.name)
                    {
                        return Err(error(format!(
                            "{option}: column {name} of {} is named twice",
                            crate::printable(&table.name)
                        )));
                    }
                    columns.push(column.clone());
                }
                table.columns = columns;
            }
            Choice::Condition(condition) => {
                if conditions[index].replace(condition.clone()).is_some() {
                    return Err(error(format!(
                        "{option}: table {} has two conditions; join them with AND",
                        crate::printable(&table.name)
                    )));
                }
            }
        }
    }
    Ok(conditions)
}

/// The table a choice is for.
fn target(choice: &TableChoice, option: &str, catalog: &[Table]) -> Result<usize, SelectionError> {
    match &choice.table {
        None if catalog.len() == 1 => Ok(0),
        None => Err(error(format!(
            "{option} without a table name needs exactly one table, and {} are selected: \
             write {option} 'TABLE:...'",
            catalog.len()
        ))),
        Some(name) => catalog
            .iter()
            .position(|t| name.matches(&t.name))
            .ok_or_else(|| {
                let selected: Vec<String> = catalog.iter().map(|t| t.name.clone()).collect();
                let hint = name.hint(&selected, |n| {
                    format!("{option} {}", shell_word(&format!("{n}:...")))
                });
                let hint = match hint.is_empty() {
                    true => " (check --tables and --exclude)".to_string(),
                    false => hint,
                };
                error(format!(
                    "{option}: table {name} is not among the tables selected{hint}"
                ))
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Column;

    fn catalog() -> Vec<Table> {
        let table = |name: &str, columns: &[&str]| Table {
            relation_id: 128,
            name: name.into(),
            columns: columns
                .iter()
                .map(|c| Column {
                    name: c.to_string(),
                    ..Column::default()
                })
                .collect(),
            computed: Vec::new(),
            pointer_pages: 1,
            readable_by_user: false,
        };
        vec![
            table("STOCK", &["S_I_ID", "S_W_ID", "S_PRICE", "Odd, name"]),
            table("lower", &["x"]),
        ]
    }

    fn names(table: &Table) -> Vec<&str> {
        table.columns.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn columns_are_chosen_in_the_order_given_with_sql_name_rules() {
        let mut tables = catalog();
        let choices = [
            parse_columns("stock: s_price , \"Odd, name\",S_I_ID").unwrap(),
            parse_columns("\"lower\":\"x\"").unwrap(),
        ];
        let conditions = apply(&choices, &mut tables).unwrap();
        assert_eq!(names(&tables[0]), ["S_PRICE", "Odd, name", "S_I_ID"]);
        assert_eq!(names(&tables[1]), ["x"]);
        assert_eq!(conditions, [None, None]);
    }

    #[test]
    fn unknown_names_are_refused_with_what_there_is() {
        let mut tables = catalog();
        let err = apply(&[parse_columns("STOCK:S_I_ID,NOPE").unwrap()], &mut tables).unwrap_err();
        assert_eq!(
            err.0,
            "--columns: table STOCK has no column NOPE; its columns are S_I_ID, S_W_ID, \
             S_PRICE, Odd, name"
        );
        let err = apply(&[parse_columns("X:A").unwrap()], &mut catalog()).unwrap_err();
        assert!(
            err.0.contains("table X is not among the tables selected"),
            "{err}"
        );
        // A quoted name is exact: "stock" is not STOCK.
        let err = apply(&[parse_columns("\"stock\":A").unwrap()], &mut catalog()).unwrap_err();
        assert!(err.0.contains("table \"stock\""), "{err}");
        let err = apply(&[parse_columns("S_I_ID").unwrap()], &mut catalog()).unwrap_err();
        assert!(
            err.0
                .contains("needs exactly one table, and 2 are selected"),
            "{err}"
        );
        for bad in ["A,,B", "\"A", "A \"B\"", ""] {
            assert!(parse_columns(bad).is_err(), "{bad}");
        }
        let twice = [parse_columns("STOCK:S_I_ID,s_i_id").unwrap()];
        assert!(apply(&twice, &mut catalog())
            .unwrap_err()
            .0
            .contains("named twice"));
    }

    #[test]
    fn unquoted_is_upper_case_and_quoted_is_exact_with_a_hint_between() {
        let mut tables = catalog();
        tables.push(Table {
            name: "stock".into(),
            ..tables[1].clone()
        });
        // STOCK and "stock" both exist: each spelling picks its own.
        let choices = [
            parse_columns("stock:s_w_id").unwrap(),
            parse_condition("\"stock\": \"x\" > 1").unwrap(),
        ];
        let conditions = apply(&choices, &mut tables).unwrap();
        assert_eq!(names(&tables[0]), ["S_W_ID"]);
        assert_eq!(conditions, [None, None, Some("\"x\" > 1".to_string())]);
        // An unquoted name is never taken as written: "lower" needs quotes.
        let err = apply(&[parse_columns("lower:x").unwrap()], &mut catalog()).unwrap_err();
        assert_eq!(
            err.0,
            "--columns: table lower is not among the tables selected (unquoted names are \
             upper-cased, as in SQL: did you mean \"lower\"? --columns '\"lower\":...')"
        );
        let err = apply(&[parse_condition("\"Stock\":1=1").unwrap()], &mut catalog());
        assert!(err
            .unwrap_err()
            .0
            .contains("(a quoted name is exact: did you mean STOCK? --where STOCK:...)"));
        let err = apply(&[parse_columns("\"lower\":X").unwrap()], &mut catalog()).unwrap_err();
        assert_eq!(
            err.0,
            "--columns: table lower has no column X (unquoted names are upper-cased, as in \
             SQL: did you mean \"x\"? write \"x\"); its columns are x"
        );
        // Embedded quotes are doubled.
        let odd = parse_columns("\"Odd, name\"").unwrap();
        assert_eq!(
            odd.what,
            Choice::Columns(vec![Name::Quoted("Odd, name".into())])
        );
        assert_eq!(Name::parse("\"a\"\"b\""), Some(Name::Quoted("a\"b".into())));
        assert_eq!(Name::parse("s_i_id").unwrap().stored(), "S_I_ID");
        assert!(!Name::parse("stock").unwrap().matches("stock"));
    }

    #[test]
    fn a_condition_goes_to_its_table_or_the_only_one() {
        let mut tables = catalog();
        let choices = [parse_condition("STOCK: S_W_ID = 7").unwrap()];
        assert_eq!(
            apply(&choices, &mut tables).unwrap(),
            [Some("S_W_ID = 7".to_string()), None]
        );
        let mut one = vec![catalog().remove(0)];
        // A time literal's colon is not a table name.
        let choices = [parse_condition("S_DATA > '10:00'").unwrap()];
        assert_eq!(
            apply(&choices, &mut one).unwrap(),
            [Some("S_DATA > '10:00'".to_string())]
        );
        let choices = [parse_condition(":X:Y = 1").unwrap()];
        assert_eq!(choices[0].table, None);
    }

    #[test]
    fn conditions_that_could_escape_their_parentheses_are_refused() {
        for bad in [
            "1=1) OR (1=1",
            "1=1 OR (1=1",
            "X = 'it''s",
            "\"A = 1",
            "A = 1 /* open",
            "A = 1; DELETE FROM T",
            "   ",
            "ID < 0 --\r) OR 1=1 OR (1=1",
            "ID = GEN_ID(S, 1)",
            "ID = NEXT VALUE FOR S",
        ] {
            assert!(check_condition(bad).is_err(), "{bad}");
        }
        // Shown with its control characters escaped, on one line.
        assert_eq!(
            parse_condition("ID < 0 --\r\n) OR (1=1").unwrap_err().0,
            "--where 'ID < 0 --\\r\\n) OR (1=1': a ) closes more than the condition opened"
        );
        for good in [
            "A = 1",
            "(A = 1 OR B = 2) AND C IN (1, 2)",
            "S = 'a ) b' AND \"x)\" = 1",
            "X = 'it''s'",
            "A = 1 -- a note ) (",
            "A /* ) */ = 1",
        ] {
            assert!(check_condition(good).is_ok(), "{good}");
        }
    }
}
