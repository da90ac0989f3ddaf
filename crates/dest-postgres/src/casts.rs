//! `--no-schema`: the rows go into staging tables of fbunload's types,
//! then `INSERT ... SELECT` into the user's tables, where PostgreSQL's
//! assignment casts would change values without a word (1.49 into an
//! `integer` is 1, a timestamp into a `date` loses its time, a text cut
//! to a shorter `varchar`). Before any row moves, each column's type is
//! compared with the target column's, both as PostgreSQL names them:
//! the same type, or one that keeps every value of it (`integer` into
//! `bigint`, `numeric(10,2)` into `numeric(12,3)`, `varchar(20)` into
//! `text`), or refuses the values it cannot hold (`bigint` into
//! `integer`: out of range), passes; one that would round, cut or read
//! values otherwise is refused, naming the column.

use postgres::GenericClient;

use fbunload_exec::ExecError;

use crate::{ident, pg_error, pg_name};

/// A column's type as PostgreSQL keeps it: the base type's name
/// (`int4`, `numeric`, `_varchar` for arrays; a domain's base type) and
/// its modifier (`-1` where none), and how it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PgType {
    name: String,
    modifier: i32,
    shown: String,
}

fn column_types(
    client: &mut impl GenericClient,
    table: &str,
) -> Result<Vec<(String, PgType)>, ExecError> {
    let rows = client
        .query(
            "SELECT a.attname::text, b.typname::text, CASE WHEN t.typtype = 'd' THEN \
             t.typtypmod ELSE a.atttypmod END, pg_catalog.format_type(a.atttypid, a.atttypmod) \
             FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype \
             ELSE t.oid END WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT \
             a.attisdropped",
            &[&table],
        )
        .map_err(|e| pg_error("reading the target's column types", e))?;
    Ok(rows
        .iter()
        .map(|r| {
            let t = PgType {
                name: r.get(1),
                modifier: r.get(2),
                shown: r.get(3),
            };
            (r.get(0), t)
        })
        .collect())
}

/// Refuses a column of `table` (Firebird name; in PostgreSQL `pg`, with
/// its staging copy in `staging`) whose target type would change values.
pub(crate) fn refuse_changing_casts(
    client: &mut impl GenericClient,
    staging: &str,
    schema: &str,
    table: &str,
    pg: &str,
    columns: &[String],
) -> Result<(), ExecError> {
    let ours = column_types(client, &format!("{}.{}", ident(staging), ident(pg)))?;
    let theirs = column_types(client, &format!("{}.{}", ident(schema), ident(pg)))?;
    for column in columns {
        let name = pg_name(column);
        let (Some((_, from)), Some((_, to))) = (
            ours.iter().find(|(n, _)| *n == name),
            theirs.iter().find(|(n, _)| *n == name),
        ) else {
            continue;
        };
        if !keeps_values(from, to) {
            return Err(ExecError::Usage(format!(
                "--no-schema: table {table}, column {column}: its values are {} and {schema}.{pg}.{} \
                 is {}, which would change some of them (PostgreSQL casts without a word); \
                 make the column {} or wider, or leave it out (--columns); nothing was loaded",
                from.shown,
                ident(&name),
                to.shown,
                from.shown
            )));
        }
    }
    Ok(())
}

/// `numeric(p, s)`'s precision and scale; `None` unconstrained.
fn numeric(modifier: i32) -> Option<(i32, i32)> {
    (modifier >= 4).then(|| (((modifier - 4) >> 16) & 0xffff, (modifier - 4) & 0xffff))
}

/// Whether no value of type `from` becomes another in type `to`: the
/// value is kept, or PostgreSQL refuses it (too large), but it is never
/// rounded, cut or read otherwise.
fn keeps_values(from: &PgType, to: &PgType) -> bool {
    if from.name == to.name && from.modifier == to.modifier {
        return true;
    }
    // Arrays: element by element.
    if let (Some(f), Some(t)) = (from.name.strip_prefix('_'), to.name.strip_prefix('_')) {
        let element = |name: &str, of: &PgType| PgType {
            name: name.into(),
            modifier: of.modifier,
            shown: String::new(),
        };
        return keeps_values(&element(f, from), &element(t, to));
    }
    let (f, t) = (from.name.as_str(), to.name.as_str());
    let length = |m: i32| (m >= 4).then_some(m - 4);
    let integer = |name: &str| matches!(name, "int2" | "int4" | "int8");
    match (f, t) {
        // A value too large for the target is refused by PostgreSQL
        // (out of range, numeric field overflow), never changed.
        _ if integer(f) && (integer(t) || t == "numeric") => true,
        ("numeric", _) if integer(t) => numeric(from.modifier).is_some_and(|(_, s)| s == 0),
        ("int2", "float4" | "float8") | ("int4", "float8") | ("float4", "float8") => true,
        ("numeric", "numeric") => match (numeric(from.modifier), numeric(to.modifier)) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some((_, s)), Some((_, s2))) => s2 >= s,
        },
        // Fractions of seconds: 6 digits where no precision is given.
        ("time" | "timetz" | "timestamp" | "timestamptz", _) if f == t => {
            let digits = |m: i32| if m < 0 { 6 } else { m };
            digits(to.modifier) >= digits(from.modifier)
        }
        ("date", "timestamp") => true,
        ("varchar" | "text", "varchar" | "text") => {
            match (length(from.modifier), length(to.modifier)) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(n), Some(m)) => m >= n,
            }
        }
        // Padded to its length either way: blanks are not part of it.
        ("bpchar", "bpchar") => match (length(from.modifier), length(to.modifier)) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(n), Some(m)) => m >= n,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, modifier: i32) -> PgType {
        PgType {
            name: name.into(),
            modifier,
            shown: String::new(),
        }
    }

    fn numeric_of(p: i32, s: i32) -> PgType {
        t("numeric", ((p << 16) | s) + 4)
    }

    #[test]
    fn only_casts_that_keep_every_value_pass() {
        let keeps = |a: PgType, b: PgType| keeps_values(&a, &b);
        assert!(keeps(t("int4", -1), t("int4", -1)));
        assert!(keeps(t("int4", -1), t("int8", -1)));
        // Too large is refused by PostgreSQL, not changed.
        assert!(keeps(t("int8", -1), t("int4", -1)));
        assert!(keeps(t("int4", -1), numeric_of(5, 2)));
        assert!(keeps(numeric_of(10, 2), numeric_of(9, 2)));
        assert!(keeps(numeric_of(10, 0), t("int4", -1)));
        // Rounded: refused.
        assert!(!keeps(numeric_of(10, 2), t("int4", -1)));
        assert!(keeps(numeric_of(10, 2), numeric_of(12, 3)));
        assert!(!keeps(numeric_of(10, 2), numeric_of(10, 1)));
        assert!(keeps(numeric_of(10, 2), t("numeric", -1)));
        assert!(!keeps(t("numeric", -1), numeric_of(38, 10)));
        assert!(!keeps(t("int8", -1), t("float8", -1)));
        assert!(!keeps(t("float8", -1), t("int8", -1)));
        assert!(!keeps(t("timestamp", -1), t("date", -1)));
        assert!(!keeps(t("timestamp", -1), t("timestamptz", -1)));
        assert!(!keeps(t("timestamp", -1), t("timestamp", 0)));
        assert!(keeps(t("date", -1), t("timestamp", -1)));
        assert!(keeps(t("varchar", 24), t("text", -1)));
        assert!(keeps(t("varchar", 24), t("varchar", 30)));
        assert!(!keeps(t("varchar", 24), t("varchar", 10)));
        assert!(!keeps(t("text", -1), t("varchar", 10)));
        assert!(!keeps(t("bpchar", 7), t("varchar", 10)));
        assert!(keeps(t("bpchar", 7), t("bpchar", 9)));
        assert!(!keeps(t("float8", -1), t("float4", -1)));
        assert!(keeps(t("_int4", -1), t("_int8", -1)));
        assert!(!keeps(t("_varchar", 24), t("_varchar", 10)));
        assert!(!keeps(t("bytea", -1), t("text", -1)));
    }
}
