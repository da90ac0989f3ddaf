//! Firebird's PSQL objects as whole DDL, rebuilt from the catalog, for
//! a destination that translates them (fbunload-psql): the catalog
//! keeps a trigger's or procedure's body apart from its header (table,
//! timing, events, position; parameters and their types), and a
//! translator needs both. Also the exceptions PSQL raises and each
//! view's column names (a view's source is only its SELECT).
//!
//! The header is written on the body's first line, so a line number in
//! the DDL is the same line of the source the catalog keeps.

use std::collections::{BTreeMap, HashSet};

use fbunload_client::{ClientError, Transaction};

use crate::catalog::{int, text};
use crate::identifier::quote_identifier;
use crate::inventory::ColumnRow;
use crate::schema::{blob_text, each_row, has_catalog_column};
use crate::Column;

/// A trigger, procedure or function, as `CREATE ...` DDL; a view as its
/// SELECT.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PsqlObject {
    /// `trigger`, `procedure`, `function`, `view`.
    pub kind: String,
    pub name: String,
    /// A trigger's table.
    pub table: Option<String>,
    pub ddl: String,
}

/// `CREATE EXCEPTION name 'message'`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirebirdException {
    pub name: String,
    pub number: i64,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routines {
    /// Table triggers, procedures and PSQL functions (not those of
    /// packages, which are reported as their package).
    pub objects: Vec<PsqlObject>,
    pub exceptions: Vec<FirebirdException>,
    /// Each view's column names, in order.
    pub view_columns: BTreeMap<String, Vec<String>>,
}

impl Routines {
    pub fn find(&self, kind: &str, name: &str) -> Option<&PsqlObject> {
        self.objects
            .iter()
            .find(|o| o.kind == kind && o.name == name)
    }
}

/// `BEFORE INSERT OR UPDATE`: RDB$TRIGGER_TYPE of a table trigger. Odd
/// types fire before, even after; `(type + 1) / 2` packs up to three
/// events in two bits each (1 insert, 2 update, 3 delete).
pub fn trigger_timing(trigger_type: i64) -> Option<String> {
    if !(1..=127).contains(&trigger_type) {
        return None;
    }
    let timing = if trigger_type & 1 == 1 {
        "BEFORE"
    } else {
        "AFTER"
    };
    let mut slots = (trigger_type + 1) >> 1;
    let mut events = Vec::new();
    while slots > 0 {
        events.push(match slots & 3 {
            1 => "INSERT",
            2 => "UPDATE",
            3 => "DELETE",
            _ => return None,
        });
        slots >>= 2;
    }
    Some(format!("{timing} {}", events.join(" OR ")))
}

/// A body that does not begin with `AS` gets it.
fn with_as(source: &str) -> String {
    let starts_with_as = source
        .get(..2)
        .is_some_and(|s| s.eq_ignore_ascii_case("AS"))
        && !source[2..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$');
    if starts_with_as {
        source.to_string()
    } else {
        format!("AS {source}")
    }
}

struct Parameter {
    name: String,
    output: bool,
    data_type: String,
    default: Option<String>,
}

/// The columns of a parameter query after its owner, name, direction:
/// the RDB$FIELDS of its type and its default.
const TYPE_COLUMNS: &str =
    "f.RDB$FIELD_TYPE, f.RDB$FIELD_PRECISION, COALESCE(f.RDB$FIELD_SCALE, 0), \
     COALESCE(f.RDB$FIELD_SUB_TYPE, 0), f.RDB$CHARACTER_LENGTH, f.RDB$CHARACTER_SET_ID, \
     COALESCE(f.RDB$FIELD_LENGTH, 0), p.RDB$DEFAULT_SOURCE";

fn parameter(row: &fbunload_client::Row<'_>) -> Result<Parameter, ClientError> {
    let field_type = int(row, 3).unwrap_or(0) as i16;
    let sub_type = int(row, 6).unwrap_or(0) as i16;
    let column = Column {
        name: text(row, 1),
        field_type,
        sub_type,
        precision: int(row, 4).map(|p| p as i16),
        scale: int(row, 5).unwrap_or(0) as i16,
        char_length: int(row, 7).map(|n| n as i16),
        charset_id: int(row, 8).map(|c| c as u8),
        field_length: int(row, 9).unwrap_or(0) as i16,
        dimensions: Vec::new(),
        // Only its declared type is asked for.
        ..Column::default()
    };
    Ok(Parameter {
        name: text(row, 1),
        output: int(row, 2).unwrap_or(0) != 0,
        data_type: column.declared_type(),
        default: blob_text(row, 10)?,
    })
}

fn parameter_list(params: &[&Parameter]) -> String {
    let each: Vec<String> = params
        .iter()
        .map(|p| {
            let mut s = format!("{} {}", quote_identifier(&p.name), p.data_type);
            if let Some(d) = &p.default {
                s += " ";
                s += d;
            }
            s
        })
        .collect();
    format!("({})", each.join(", "))
}

/// Procedures or PSQL functions, each as its header (built by `header`
/// from the routine's name and parameters; `None` leaves it out) and
/// its body. `parameters` selects owner, name, whether an output, then
/// [`TYPE_COLUMNS`]; `sources` selects name and source. The two catalogs
/// keep the same things under other names.
fn routines_of(
    tr: &Transaction,
    kind: &str,
    parameters: &str,
    sources: &str,
    header: impl Fn(&str, &[Parameter]) -> Option<String>,
) -> Result<Vec<PsqlObject>, ClientError> {
    let mut params: BTreeMap<String, Vec<Parameter>> = BTreeMap::new();
    each_row(tr, parameters, |row| {
        params
            .entry(text(row, 0))
            .or_default()
            .push(parameter(row)?);
        Ok(())
    })?;
    let mut out = Vec::new();
    each_row(tr, sources, |row| {
        let name = text(row, 0);
        let Some(source) = blob_text(row, 1)? else {
            return Ok(());
        };
        let own = params.get(&name).map(Vec::as_slice).unwrap_or_default();
        let Some(header) = header(&name, own) else {
            return Ok(());
        };
        out.push(PsqlObject {
            kind: kind.into(),
            name,
            table: None,
            ddl: format!("{header} {}", with_as(&source)),
        });
        Ok(())
    })?;
    Ok(out)
}

/// The triggers, routines, views and exceptions of the catalog.
/// `columns`: every relation's column rows, in
/// [`crate::inventory::COLUMN_ROWS_ORDER`].
pub(crate) fn read_routines(
    tr: &Transaction,
    columns: &[ColumnRow],
) -> Result<Routines, ClientError> {
    let mut routines = Routines::default();
    each_row(
        tr,
        "SELECT RDB$TRIGGER_NAME, RDB$RELATION_NAME, RDB$TRIGGER_TYPE, \
         COALESCE(RDB$TRIGGER_SEQUENCE, 0), COALESCE(RDB$TRIGGER_INACTIVE, 0), \
         RDB$TRIGGER_SOURCE FROM RDB$TRIGGERS WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 \
         AND RDB$RELATION_NAME IS NOT NULL ORDER BY RDB$TRIGGER_NAME",
        |row| {
            let (Some(timing), Some(source)) =
                (trigger_timing(int(row, 2).unwrap_or(0)), blob_text(row, 5)?)
            else {
                return Ok(());
            };
            let name = text(row, 0);
            let table = text(row, 1);
            let ddl = format!(
                "CREATE TRIGGER {} FOR {} {} {timing} POSITION {} {}",
                quote_identifier(&name),
                quote_identifier(&table),
                if int(row, 4).unwrap_or(0) != 0 {
                    "INACTIVE"
                } else {
                    "ACTIVE"
                },
                int(row, 3).unwrap_or(0),
                with_as(&source)
            );
            routines.objects.push(PsqlObject {
                kind: "trigger".into(),
                name,
                table: Some(table),
                ddl,
            });
            Ok(())
        },
    )?;
    let packages = has_catalog_column(tr, "RDB$PROCEDURES", "RDB$PACKAGE_NAME")?;
    let not_packaged = |alias: &str| {
        if packages {
            format!(" AND {alias}.RDB$PACKAGE_NAME IS NULL")
        } else {
            String::new()
        }
    };
    routines.objects.extend(routines_of(
        tr,
        "procedure",
        &format!(
            "SELECT p.RDB$PROCEDURE_NAME, p.RDB$PARAMETER_NAME, p.RDB$PARAMETER_TYPE, \
             {TYPE_COLUMNS} FROM RDB$PROCEDURE_PARAMETERS p \
             JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = p.RDB$FIELD_SOURCE WHERE 1 = 1{} \
             ORDER BY p.RDB$PROCEDURE_NAME, p.RDB$PARAMETER_TYPE, p.RDB$PARAMETER_NUMBER",
            not_packaged("p")
        ),
        &format!(
            "SELECT p.RDB$PROCEDURE_NAME, p.RDB$PROCEDURE_SOURCE FROM RDB$PROCEDURES p \
             WHERE COALESCE(p.RDB$SYSTEM_FLAG, 0) = 0 AND p.RDB$PROCEDURE_SOURCE IS NOT NULL{} \
             ORDER BY p.RDB$PROCEDURE_NAME",
            not_packaged("p")
        ),
        |name, own| {
            let inputs: Vec<&Parameter> = own.iter().filter(|p| !p.output).collect();
            let outputs: Vec<&Parameter> = own.iter().filter(|p| p.output).collect();
            let mut header = format!("CREATE PROCEDURE {}", quote_identifier(name));
            if !inputs.is_empty() {
                header += &format!(" {}", parameter_list(&inputs));
            }
            if !outputs.is_empty() {
                header += &format!(" RETURNS {}", parameter_list(&outputs));
            }
            Some(header)
        },
    )?);
    if has_catalog_column(tr, "RDB$FUNCTIONS", "RDB$FUNCTION_SOURCE")? {
        // Position 0 (the RETURN_ARGUMENT) is the result.
        routines.objects.extend(routines_of(
            tr,
            "function",
            &format!(
                "SELECT p.RDB$FUNCTION_NAME, p.RDB$ARGUMENT_NAME, \
                 CASE WHEN p.RDB$ARGUMENT_POSITION = fn.RDB$RETURN_ARGUMENT THEN 1 ELSE 0 END, \
                 {TYPE_COLUMNS} FROM RDB$FUNCTION_ARGUMENTS p \
                 JOIN RDB$FUNCTIONS fn ON fn.RDB$FUNCTION_NAME = p.RDB$FUNCTION_NAME \
                 JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = p.RDB$FIELD_SOURCE \
                 WHERE fn.RDB$FUNCTION_SOURCE IS NOT NULL{}{} \
                 ORDER BY p.RDB$FUNCTION_NAME, p.RDB$ARGUMENT_POSITION",
                not_packaged("p"),
                not_packaged("fn")
            ),
            &format!(
                "SELECT fn.RDB$FUNCTION_NAME, fn.RDB$FUNCTION_SOURCE FROM RDB$FUNCTIONS fn \
                 WHERE COALESCE(fn.RDB$SYSTEM_FLAG, 0) = 0 AND fn.RDB$FUNCTION_SOURCE IS NOT NULL{} \
                 ORDER BY fn.RDB$FUNCTION_NAME",
                not_packaged("fn")
            ),
            |name, own| {
                let inputs: Vec<&Parameter> = own.iter().filter(|p| !p.output).collect();
                let result = own.iter().find(|p| p.output)?;
                Some(format!(
                    "CREATE FUNCTION {} {} RETURNS {}",
                    quote_identifier(name),
                    parameter_list(&inputs),
                    result.data_type
                ))
            },
        )?);
    }
    each_row(
        tr,
        "SELECT RDB$EXCEPTION_NAME, RDB$EXCEPTION_NUMBER, RDB$MESSAGE FROM RDB$EXCEPTIONS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 ORDER BY RDB$EXCEPTION_NAME",
        |row| {
            routines.exceptions.push(FirebirdException {
                name: text(row, 0),
                number: int(row, 1).unwrap_or(0),
                message: text(row, 2),
            });
            Ok(())
        },
    )?;
    each_row(
        tr,
        "SELECT RDB$RELATION_NAME, RDB$VIEW_SOURCE FROM RDB$RELATIONS \
         WHERE RDB$VIEW_BLR IS NOT NULL AND COALESCE(RDB$SYSTEM_FLAG, 0) = 0 \
         ORDER BY RDB$RELATION_NAME",
        |row| {
            if let Some(source) = blob_text(row, 1)? {
                routines.objects.push(PsqlObject {
                    kind: "view".into(),
                    name: text(row, 0),
                    table: None,
                    ddl: source,
                });
            }
            Ok(())
        },
    )?;
    // The views' columns from the catalog's column rows read already: a
    // query of its own walked all 35,000 of them at 5,000 tables.
    let mut views = HashSet::new();
    each_row(
        tr,
        "SELECT RDB$RELATION_NAME FROM RDB$RELATIONS WHERE RDB$VIEW_BLR IS NOT NULL",
        |row| {
            views.insert(text(row, 0));
            Ok(())
        },
    )?;
    for column in columns.iter().filter(|c| views.contains(&c.relation)) {
        routines
            .view_columns
            .entry(column.relation.clone())
            .or_default()
            .push(column.name.clone());
    }
    Ok(routines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_types_decode_to_timing_and_events() {
        let cases = [
            (1, "BEFORE INSERT"),
            (2, "AFTER INSERT"),
            (3, "BEFORE UPDATE"),
            (4, "AFTER UPDATE"),
            (5, "BEFORE DELETE"),
            (6, "AFTER DELETE"),
            (17, "BEFORE INSERT OR UPDATE"),
            (18, "AFTER INSERT OR UPDATE"),
            (25, "BEFORE INSERT OR DELETE"),
            (113, "BEFORE INSERT OR UPDATE OR DELETE"),
            (114, "AFTER INSERT OR UPDATE OR DELETE"),
        ];
        for (code, timing) in cases {
            assert_eq!(trigger_timing(code).as_deref(), Some(timing), "{code}");
        }
        // Database (8192 + n) and DDL triggers are not table triggers.
        assert_eq!(trigger_timing(8192), None);
    }

    #[test]
    fn a_body_gets_as_once() {
        assert_eq!(with_as("AS\nBEGIN END"), "AS\nBEGIN END");
        assert_eq!(with_as("BEGIN END"), "AS BEGIN END");
        assert_eq!(with_as("ASSIGN"), "AS ASSIGN");
    }
}
