//! Nothing lost unreported: every object of the Firebird catalog walk
//! ([`fbunload_plan::inventory`]) is either made in PostgreSQL (the DDL
//! steps record what they make in [`Created`]) or listed in
//! `_fbunload_untranslated` with its source and why. The accounting is
//! kept apart from the DDL on purpose: an object no step knows about is
//! reported here with its kind's reason, never dropped.

use std::collections::BTreeSet;

use fbunload_plan::inventory::{CatalogObject, Inventory};

use crate::ddl::Untranslated;

/// What the DDL made, by inventory kind, table and name.
#[derive(Debug, Default, Clone)]
pub struct Created(BTreeSet<(String, Option<String>, String)>);

impl Created {
    pub fn add(&mut self, kind: &str, table: Option<&str>, name: &str) {
        self.0.insert((
            kind.to_string(),
            table.map(str::to_string),
            name.to_string(),
        ));
    }

    fn has(&self, kind: &str, table: Option<&str>, name: &str) -> bool {
        self.0.contains(&(
            kind.to_string(),
            table.map(str::to_string),
            name.to_string(),
        ))
    }
}

/// How many objects of one kind were made and how many reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub kind: String,
    pub created: usize,
    pub reported: usize,
}

/// Accounts for every catalog object: made ones are counted, reported
/// ones too, and each that is neither is added to `report` with its
/// kind's reason. `loaded` says which tables were loaded. Returns the
/// count of each kind, in the inventory's order of kinds.
pub fn account(
    inventory: &Inventory,
    created: &Created,
    loaded: &dyn Fn(&str) -> bool,
    report: &mut Vec<Untranslated>,
) -> Vec<Tally> {
    let mut tallies: Vec<Tally> = Vec::new();
    let reported: BTreeSet<(String, Option<String>, String)> = report
        .iter()
        .map(|u| (u.kind.clone(), u.table.clone(), u.name.clone()))
        .collect();
    let mut added = Vec::new();
    for object in &inventory.objects {
        let names = std::iter::once(&object.name).chain(object.engine_name.as_ref());
        let mut made = false;
        let mut listed = false;
        for name in names {
            made |= created.has(&object.kind, object.table.as_deref(), name);
            listed |= reported.contains(&(object.kind.clone(), object.table.clone(), name.clone()));
        }
        if made {
            tally(&mut tallies, &object.kind).created += 1;
        } else if !listed {
            added.push(Untranslated {
                kind: object.kind.clone(),
                table: object.table.clone(),
                name: object.name.clone(),
                source: object.source.clone(),
                why: if object.kind == "domain check"
                    && !created.has("domain", object.table.as_deref(), &object.name)
                {
                    format!("its domain {} was not made (see why above)", object.name)
                } else {
                    why_not(object, loaded)
                },
            });
        }
    }
    report.extend(added);
    for u in report.iter() {
        tally(&mut tallies, &u.kind).reported += 1;
    }
    tallies
}

/// The tally of `kind`, added where there is none yet.
fn tally<'t>(tallies: &'t mut Vec<Tally>, kind: &str) -> &'t mut Tally {
    let at = match tallies.iter().position(|t| t.kind == kind) {
        Some(at) => at,
        None => {
            tallies.push(Tally {
                kind: kind.to_string(),
                ..Tally::default()
            });
            tallies.len() - 1
        }
    };
    &mut tallies[at]
}

/// Why an object of this kind was not made, where no DDL step said.
fn why_not(object: &CatalogObject, loaded: &dyn Fn(&str) -> bool) -> String {
    let table_not_loaded = object
        .table
        .as_deref()
        .is_some_and(|t| !loaded(t) && object.kind != "grant");
    if table_not_loaded && object.kind != "table" {
        return "its table was not loaded by this run".into();
    }
    let text = match object.kind.as_str() {
        "table" => "not selected for this run (--tables, --exclude)",
        "column" => "not loaded by this run (--columns)",
        "computed column" => "its expression is Firebird's SQL; not loaded",
        "view" => "its SELECT is Firebird's SQL: translate it by hand (it reads no loaded table)",
        "global temporary table" => {
            "PostgreSQL has no global temporary tables (an UNLOGGED table would share its rows \
             between sessions): create it as a TEMP table in each session that uses it"
        }
        "external table" => "its rows are in a file outside the database (EXTERNAL FILE)",
        "domain" => "used by no loaded column",
        "domain check" => "its CHECK is Firebird's SQL and was not translated",
        "primary key" | "unique" | "foreign key" | "index" | "check constraint" => {
            "not made for the loaded columns"
        }
        "sequence" => "used by none of the loaded tables",
        "trigger" if object.table.is_none() => {
            "a database or DDL trigger: PostgreSQL has event triggers instead"
        }
        "trigger" | "procedure" => "Firebird's PSQL: translate it by hand",
        "function" if object.source.starts_with("EXTERNAL FUNCTION") => {
            "an external function (UDF) in a native library: PostgreSQL cannot call it"
        }
        "function" => "Firebird's PSQL: translate it by hand",
        "package" => {
            "Firebird's PSQL; PostgreSQL has no packages (a schema of functions is closest)"
        }
        "exception" => {
            "PostgreSQL has no exception objects: the PSQL that raises it becomes RAISE \
             EXCEPTION with its message"
        }
        "collation" => {
            "not made: used by no loaded column, or the PostgreSQL server has no ICU \
             nondeterministic collations (12+ built with ICU)"
        }
        "role" | "grant" => {
            "roles and grants are made only with --pg-grants (PostgreSQL roles belong to the \
             whole cluster)"
        }
        "comment" => "on an object not made in PostgreSQL",
        _ => "not made in PostgreSQL",
    };
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, table: Option<&str>, name: &str) -> CatalogObject {
        CatalogObject {
            kind: kind.into(),
            table: table.map(Into::into),
            name: name.into(),
            source: format!("source of {name}"),
            engine_name: None,
        }
    }

    #[test]
    fn every_object_is_made_or_reported_and_counted() {
        let inventory = Inventory {
            objects: vec![
                object("table", None, "A"),
                object("table", None, "B"),
                object("column", Some("A"), "X"),
                object("trigger", Some("A"), "T"),
                object("exception", None, "E"),
                CatalogObject {
                    engine_name: Some("INTEG_3".into()),
                    ..object("primary key", Some("A"), "(X)")
                },
                object("index", Some("B"), "I"),
            ],
            ..Inventory::default()
        };
        let mut created = Created::default();
        created.add("table", None, "A");
        created.add("column", Some("A"), "X");
        created.add("primary key", Some("A"), "(X)");
        let mut report = vec![Untranslated {
            kind: "trigger".into(),
            table: Some("A".into()),
            name: "T".into(),
            source: "AS BEGIN END".into(),
            why: "Firebird's PSQL".into(),
        }];
        let tallies = account(&inventory, &created, &|t| t == "A", &mut report);
        let kinds: Vec<(&str, usize, usize)> = tallies
            .iter()
            .map(|t| (t.kind.as_str(), t.created, t.reported))
            .collect();
        assert_eq!(
            kinds,
            [
                ("table", 1, 1),
                ("column", 1, 0),
                ("primary key", 1, 0),
                ("trigger", 0, 1),
                ("exception", 0, 1),
                ("index", 0, 1),
            ]
        );
        // The trigger is listed once; the rest with their kind's reason.
        assert_eq!(report.len(), 4);
        let index = report.iter().find(|u| u.name == "I").unwrap();
        assert_eq!(index.why, "its table was not loaded by this run");
        assert_eq!(index.source, "source of I");
    }
}
