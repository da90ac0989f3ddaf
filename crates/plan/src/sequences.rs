//! What in the catalog changes a sequence when it is read: a run must not
//! move sequences, and a read-only transaction does not stop `GEN_ID(S, 1)`
//! or `NEXT VALUE FOR S` (sequences are outside transactions). fbunload's
//! own SQL never calls them and user SQL that does is refused
//! ([`crate::query`]); but a view can (`CREATE VIEW V AS SELECT ID,
//! GEN_ID(S, 1) FROM U` moves S once per row read), and so can a `COMPUTED
//! BY` column, wherever a condition or a query reads it, and a procedure or
//! function.
//!
//! The engine records what each of those uses in `RDB$DEPENDENCIES`:
//! a view, a computed column (under its domain, `RDB$n`), a procedure or a
//! function that depends on a sequence, or on one of those that does, is a
//! *mover*. The catalog does not record the step, so `GEN_ID(S, 0)`, which
//! only reads S, counts too: refused rather than guessed at.

use std::collections::{HashMap, HashSet};

use fbunload_client::{ClientError, Transaction};

use crate::catalog::{query, text};
use crate::sql_text::{tokens, TokenKind};

/// `RDB$DEPENDENCIES` object types (Firebird's `obj.h`).
const RELATION: i64 = 0;
const VIEW: i64 = 1;
const COMPUTED: i64 = 3;
const GENERATOR: i64 = 14;

/// The objects of a database that change a sequence when read.
#[derive(Debug, Default)]
pub struct SequenceMovers {
    /// Views, procedures, functions (and packages) by name, each with a
    /// sequence it moves.
    objects: HashMap<String, String>,
    /// Computed columns: (table, column) with a sequence each moves.
    columns: HashMap<(String, String), String>,
}

/// An object of the catalog's dependencies: (RDB$DEPENDENT_TYPE, name).
type CatalogObject = (i64, String);
/// What an object depends on: (type, name, field; '' for the object whole).
type DependedOn = (i64, String, String);

impl SequenceMovers {
    /// Reads the movers from the catalog.
    pub fn read(tr: &Transaction) -> Result<SequenceMovers, ClientError> {
        // (dependent type, dependent name) -> [(type, name, field)] it uses.
        let mut edges: Vec<(CatalogObject, DependedOn)> = Vec::new();
        query(
            tr,
            "SELECT RDB$DEPENDENT_TYPE, RDB$DEPENDENT_NAME, RDB$DEPENDED_ON_TYPE, \
             RDB$DEPENDED_ON_NAME, COALESCE(RDB$FIELD_NAME, '') FROM RDB$DEPENDENCIES",
            |row| {
                let ty = |i| crate::catalog::int(row, i).unwrap_or(-1);
                edges.push(((ty(0), text(row, 1)), (ty(2), text(row, 3), text(row, 4))));
            },
        )?;
        if !edges.iter().any(|(_, (ty, _, _))| *ty == GENERATOR) {
            return Ok(SequenceMovers::default());
        }
        // The columns of each computed domain, and each such column's
        // domain: a table's COMPUTED BY column, or a view's column that is
        // an expression (the engine records what either uses under the
        // domain), which a view over it shares.
        let mut domains: HashMap<String, Vec<(String, String)>> = HashMap::new();
        query(
            tr,
            "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, rf.RDB$FIELD_SOURCE \
             FROM RDB$RELATION_FIELDS rf WHERE EXISTS (SELECT 1 FROM RDB$DEPENDENCIES d \
             WHERE d.RDB$DEPENDENT_NAME = rf.RDB$FIELD_SOURCE AND d.RDB$DEPENDENT_TYPE = 3)",
            |row| {
                domains
                    .entry(text(row, 2))
                    .or_default()
                    .push((text(row, 0), text(row, 1)));
            },
        )?;
        let views: HashSet<&str> = edges
            .iter()
            .filter(|((ty, _), _)| *ty == VIEW)
            .map(|((_, name), _)| name.as_str())
            .collect();
        let columns_by_domain: HashMap<(String, String), String> = domains
            .iter()
            .flat_map(|(domain, columns)| columns.iter().map(|c| (c.clone(), domain.clone())))
            .collect();
        // Movers by (type, name), with a sequence each moves; to a fixpoint,
        // for movers through other movers.
        let mut movers: HashMap<(i64, String), String> = HashMap::new();
        loop {
            let mut grew = false;
            for ((dep_type, dep_name), (on_type, on_name, field)) in &edges {
                let key = (*dep_type, dep_name.clone());
                if movers.contains_key(&key) {
                    continue;
                }
                let moved = match *on_type {
                    GENERATOR => Some(on_name.clone()),
                    // A table's column: a mover if it is a computed one that is.
                    RELATION | VIEW if !field.is_empty() => columns_by_domain
                        .get(&(on_name.clone(), field.clone()))
                        .and_then(|domain| movers.get(&(COMPUTED, domain.clone())))
                        .cloned(),
                    ty => movers.get(&(ty, on_name.clone())).cloned(),
                };
                if let Some(sequence) = moved {
                    // A view moves the sequence when read, whichever of its
                    // columns does.
                    if *dep_type == COMPUTED {
                        for (relation, _) in domains.get(dep_name).into_iter().flatten() {
                            if views.contains(relation.as_str()) {
                                movers.insert((VIEW, relation.clone()), sequence.clone());
                            }
                        }
                    }
                    movers.insert(key, sequence);
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        let mut found = SequenceMovers::default();
        for ((ty, name), sequence) in movers {
            if ty == COMPUTED {
                for column in domains.get(&name).into_iter().flatten() {
                    found.columns.insert(column.clone(), sequence.clone());
                }
            } else if ty != RELATION {
                found.objects.insert(name, sequence);
            }
        }
        Ok(found)
    }

    /// Why reading view `name` would move a sequence, if it would.
    pub fn view(&self, name: &str) -> Option<String> {
        let sequence = self.objects.get(name)?;
        Some(format!(
            "reading it changes sequence {} (the view, or something it uses, calls GEN_ID or \
             NEXT VALUE FOR on it), even in fbunload's read-only transaction",
            crate::printable(sequence)
        ))
    }

    /// Why reading `sql` (a condition of table `own`, or a query) would
    /// move a sequence, if it names a mover: a view, procedure or function,
    /// or a computed column of `own` or of a table it names.
    pub fn text(&self, sql: &str, own: Option<&str>) -> Option<String> {
        if self.objects.is_empty() && self.columns.is_empty() {
            return None;
        }
        let names: HashSet<String> = tokens(sql)
            .ok()?
            .iter()
            .filter_map(|t| match t.kind {
                TokenKind::Word => Some(t.text.to_ascii_uppercase()),
                TokenKind::QuotedName => Some(t.text[1..t.text.len() - 1].replace("\"\"", "\"")),
                _ => None,
            })
            .collect();
        if let Some((name, sequence)) = self.objects.iter().find(|(n, _)| names.contains(*n)) {
            return Some(format!(
                "{} changes sequence {} when read (it calls GEN_ID or NEXT VALUE FOR on it), \
                 even in fbunload's read-only transaction",
                crate::printable(name),
                crate::printable(sequence)
            ));
        }
        let tables_named = |table: &String| own == Some(table.as_str()) || names.contains(table);
        let mut columns: Vec<_> = self
            .columns
            .iter()
            .filter(|((table, column), _)| tables_named(table) && names.contains(column))
            .collect();
        columns.sort();
        let ((table, column), sequence) = columns.first()?;
        Some(format!(
            "column {} of {} is COMPUTED BY an expression that changes sequence {} each time it \
             is read, even in fbunload's read-only transaction",
            crate::printable(column),
            crate::printable(table),
            crate::printable(sequence)
        ))
    }
}
