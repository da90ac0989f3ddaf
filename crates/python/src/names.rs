//! The command line's rule for names (`-t item` is ITEM, `-t '"item"'`
//! is item; see `fbunload_plan::selection`), for the Python front ends
//! whose options take names as the command line does (`fbunload.spark`'s
//! `table`, `columns`, `split_by`): one rule, made once, in Rust. And
//! which databases are files, whose reads Spark's tasks get through one
//! process.

use fbunload_plan::selection::{parse_columns, Choice, Name};
use pyo3::prelude::*;

use crate::UsageError;

/// The stored name that `written` stands for: unquoted upper-cased,
/// double-quoted exact. `option` names the option in the error.
#[pyfunction]
pub fn stored_name(written: &str, option: &str) -> PyResult<String> {
    Name::parse(written).map(|n| n.stored()).ok_or_else(|| {
        UsageError::new_err(format!(
            "{option} {}: not a name; put a name with other characters in double quotes, \
             as in SQL: {}",
            fbunload_plan::printable(written),
            fbunload_plan::quote_identifier(written.trim())
        ))
    })
}

/// The stored names of a comma-separated list of names, as `--columns`
/// takes it (`ID,"Odd, name"`).
#[pyfunction]
pub fn stored_names(written: &str, option: &str) -> PyResult<Vec<String>> {
    let refuse = |message: String| UsageError::new_err(message.replacen("--columns", option, 1));
    let choice = parse_columns(written).map_err(|e| refuse(e.0))?;
    match (choice.table, choice.what) {
        (None, Choice::Columns(names)) => Ok(names.iter().map(Name::stored).collect()),
        _ => Err(refuse(format!(
            "{option} '{}': names only, no TABLE: before them",
            fbunload_plan::printable(written)
        ))),
    }
}

/// How to write the stored name `stored` so that the rule gives it back:
/// bare (`STOCK`) or double-quoted (`"stock"`).
#[pyfunction]
pub fn sql_name(stored: &str) -> String {
    fbunload_plan::sql_name(stored)
}

/// The did-you-mean hint for `written`, which names none of `existing`:
/// ` (unquoted names are upper-cased, as in SQL: did you mean "item"? …)`
/// when one differs only in case, with `typed` (`{}` for the name as it
/// must be written) as what to type; else empty.
#[pyfunction]
pub fn name_hint(written: &str, existing: Vec<String>, typed: &str) -> String {
    match Name::parse(written) {
        Some(name) => name.hint(&existing, |shown| typed.replace("{}", shown)),
        None => String::new(),
    }
}

/// Whether `database` is a file that this process's embedded engine opens
/// (a plain path), not a server's address (`host:path`, `inet://…`).
#[pyfunction]
pub fn is_plain_path(database: &str) -> bool {
    fbunload::is_plain_path(database)
}
