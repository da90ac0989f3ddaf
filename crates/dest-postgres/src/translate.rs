//! Firebird's own SQL of the loaded tables made in PostgreSQL, through
//! the PSQL translator (fbunload-psql), once the rows, keys and
//! sequences are in: table CHECK constraints, generated keys (a BEFORE
//! INSERT trigger filling a key from a generator → `DEFAULT nextval`,
//! the sequence owned by the column), computed columns (`GENERATED
//! ALWAYS AS ... STORED`), expression and partial indices (after the
//! computed columns, which an index expression may read), views in the
//! order they read each other,
//! procedures and functions, and the triggers last, so that none fires
//! during the load.
//!
//! Each object is made in a transaction of its own: one PostgreSQL
//! refuses is rolled back and reported with PostgreSQL's reason, as one
//! the translator cannot read is reported with its construct and line;
//! nothing half made stays.
//!
//! Everything is made with the staging schema first in `search_path`,
//! so the translation names objects unqualified; routines keep
//! `SET search_path` to the target schema, where their text is read
//! when they run (after the staging schema became the target).

use fbunload_plan::schema::{ConstraintKind, Schema, TableSchema};
use fbunload_psql::{self as psql, ExprContext, NameKind};
use postgres::Client;

use crate::ddl::{SequenceNames, Untranslated};
use crate::{ident, pg_name};

/// One object to make: its statements, and how to report it if
/// PostgreSQL refuses them.
struct Step {
    kind: &'static str,
    table: Option<String>,
    name: String,
    source: String,
    statements: Vec<String>,
}

/// The names the translation writes: unqualified (see the module's
/// docs), a sequence by the name the load gave it; the column types of
/// `tables` (those the object reads: a name of two types is not known).
fn context<'a>(
    schema: &'a Schema,
    sequences: &'a SequenceNames,
    target: &str,
    tables: Vec<&'a TableSchema>,
) -> ExprContext<'a> {
    ExprContext::new()
        .with_names(move |kind, name| match kind {
            NameKind::Sequence => ident(sequences.get(name).map_or(&pg_name(name), |s| s)),
            _ => psql::default_name(kind, name),
        })
        .with_exceptions(move |name| {
            let e = schema.routines.exceptions.iter().find(|e| e.name == name)?;
            Some(psql::Exception {
                message: e.message.clone(),
                sqlstate: psql::exception_sqlstate(e.number),
            })
        })
        .with_column_types(move |column| {
            let mut types = tables
                .iter()
                .filter_map(|t| t.columns.iter().find(|c| c.name == column))
                .map(|c| &c.data_type);
            let first = types.next()?;
            types.all(|t| t == first).then(|| first.clone())
        })
        .with_functions(move |name| schema.routines.find("function", name).is_some())
        .with_tables(move |name| {
            let t = schema.tables.iter().find(|t| t.name == name)?;
            Some(psql::TableShape {
                columns: t
                    .columns
                    .iter()
                    .filter(|c| c.computed_by.is_none())
                    .map(|c| c.name.clone())
                    .collect(),
                primary_key: t
                    .constraints
                    .iter()
                    .find(|c| c.kind == ConstraintKind::PrimaryKey)
                    .map(|c| c.columns.clone())
                    .unwrap_or_default(),
            })
        })
        .with_routine_inputs(move |name| {
            let routine = schema
                .routines
                .find("procedure", name)
                .or_else(|| schema.routines.find("function", name))?;
            psql::routine_input_types(&routine.ddl).ok()
        })
        .with_search_path(target)
}

fn refused(
    kind: &str,
    table: Option<&str>,
    name: &str,
    source: &str,
    u: psql::Untranslated,
) -> Untranslated {
    Untranslated {
        kind: kind.into(),
        table: table.map(str::to_string),
        name: name.into(),
        source: source.into(),
        why: format!(
            "not translated: line {}: {}: {}",
            u.line, u.construct, u.reason
        ),
    }
}

/// The steps, in the order they are made, and what does not translate.
fn steps(
    schema: &Schema,
    sequences: &SequenceNames,
    target: &str,
    loaded: &dyn Fn(&str) -> Option<Vec<String>>,
) -> (Vec<Step>, Vec<Untranslated>) {
    let mut checks = Vec::new();
    let mut keys = Vec::new();
    let mut computed = Vec::new();
    let mut indices = Vec::new();
    let mut views = Vec::new();
    let mut routines = Vec::new();
    let mut triggers = Vec::new();
    let mut report = Vec::new();
    let table_of = |name: &str| schema.tables.iter().find(|t| t.name == name);
    for table in &schema.tables {
        let Some(columns) = loaded(&table.name) else {
            continue;
        };
        let ctx = context(schema, sequences, target, vec![table]);
        for index in table.indices.iter().filter(|i| {
            // One over columns not loaded is reported by `ddl`.
            crate::ddl::translated_index(i) && i.columns.iter().all(|c| columns.contains(c))
        }) {
            match index_steps(schema, table, index, &ctx) {
                Ok(steps) => indices.extend(steps),
                Err((source, u)) => {
                    report.push(refused("index", Some(&table.name), &index.name, &source, u))
                }
            }
        }
        for column in table.columns.iter() {
            let Some(source) = &column.computed_by else {
                continue;
            };
            let translated = psql::translate_computed(source, &ctx)
                .and_then(|e| Ok((e, psql::translate_type(&column.data_type, &ctx)?)));
            match translated {
                Ok((expression, data_type)) => computed.push(Step {
                    kind: "computed column",
                    table: Some(table.name.clone()),
                    name: column.name.clone(),
                    source: source.clone(),
                    statements: vec![format!(
                        "ALTER TABLE {} ADD COLUMN {} {data_type} GENERATED ALWAYS AS ({expression}) STORED",
                        ident(&pg_name(&table.name)),
                        ident(&pg_name(&column.name))
                    )],
                }),
                Err(u) => report.push(refused(
                    "computed column",
                    Some(&table.name),
                    &column.name,
                    source,
                    u,
                )),
            }
        }
    }
    // PSQL functions: any view, CHECK or routine may call one.
    for function in schema
        .routines
        .objects
        .iter()
        .filter(|o| o.kind == "function")
    {
        let ctx = context(schema, sequences, target, Vec::new());
        match psql::translate_function(&function.ddl, &ctx) {
            Ok(statements) => routines.push(Step {
                kind: "function",
                table: None,
                name: function.name.clone(),
                source: function.ddl.clone(),
                statements,
            }),
            Err(u) => report.push(refused("function", None, &function.name, &function.ddl, u)),
        }
    }
    // Procedures that read no table at all (a computation, a loop) are
    // in no table's sources: they are the run's too.
    let mut sources = schema.sources.clone();
    let left_out_tables = schema
        .catalog
        .objects
        .iter()
        .any(|o| o.kind == "table" && loaded(&o.name).is_none());
    for procedure in schema
        .routines
        .objects
        .iter()
        .filter(|o| o.kind == "procedure")
    {
        let listed = sources
            .iter()
            .any(|s| s.kind == "procedure" && s.name == procedure.name);
        if !listed && psql::routine_tables(&procedure.ddl).is_ok_and(|t| t.is_empty()) {
            // SQL text it runs may reach tables this run left out: made,
            // but not without a word.
            if left_out_tables && runs_sql_text(&procedure.ddl) {
                report.push(Untranslated {
                    kind: "procedure".into(),
                    table: None,
                    name: procedure.name.clone(),
                    source: procedure.ddl.clone(),
                    why: "made, though it runs SQL text (EXECUTE STATEMENT) whose tables \
                          cannot be told, and this run left tables out: check that it reaches \
                          only tables the run loaded"
                        .into(),
                });
            }
            sources.push(fbunload_plan::schema::SourceObject {
                kind: "procedure".into(),
                table: None,
                name: procedure.name.clone(),
                source: procedure.ddl.clone(),
            });
        }
    }
    // Views that read only views of the run (and its tables and
    // procedures) are the run's too: the catalog lists a view under the
    // tables it reads, not under the views.
    loop {
        let before = sources.len();
        for view in schema.routines.objects.iter().filter(|o| o.kind == "view") {
            if sources
                .iter()
                .any(|s| s.kind == "view" && s.name == view.name)
            {
                continue;
            }
            let Ok(reads) = psql::view_reads(&view.ddl) else {
                continue;
            };
            let of_the_run = |name: &String| {
                loaded(name).is_some()
                    || sources
                        .iter()
                        .any(|s| matches!(s.kind.as_str(), "view" | "procedure") && &s.name == name)
            };
            if !reads.is_empty() && reads.iter().all(of_the_run) {
                sources.push(fbunload_plan::schema::SourceObject {
                    kind: "view".into(),
                    table: None,
                    name: view.name.clone(),
                    source: view.ddl.clone(),
                });
            }
        }
        if sources.len() == before {
            break;
        }
    }
    for object in &sources {
        let table = object.table.as_deref();
        // A view's columns may come from every table it reads.
        let mut tables: Vec<&TableSchema> = table.and_then(table_of).into_iter().collect();
        if object.kind == "view" {
            for name in psql::view_reads(&object.source).unwrap_or_default() {
                if let Some(t) = table_of(&name) {
                    if !tables.iter().any(|x| x.name == t.name) {
                        tables.push(t);
                    }
                }
            }
        }
        let ctx = context(schema, sequences, target, tables);
        let kind = object.kind.as_str();
        match kind {
            "check constraint" => match psql::translate_expression(&object.source, &ctx) {
                Ok(e) => checks.push(Step {
                    kind: "check constraint",
                    table: object.table.clone(),
                    name: object.name.clone(),
                    source: object.source.clone(),
                    statements: vec![format!(
                        "ALTER TABLE {} ADD CONSTRAINT {} CHECK ({e})",
                        ident(&pg_name(table.unwrap_or_default())),
                        ident(&pg_name(&object.name))
                    )],
                }),
                Err(u) => report.push(refused(kind, table, &object.name, &object.source, u)),
            },
            "view" => {
                let columns = schema.routines.view_columns.get(&object.name);
                match psql::translate_view(&object.source, &ctx) {
                    Ok(select) => {
                        let list = columns
                            .map(|c| {
                                let names: Vec<String> =
                                    c.iter().map(|n| ident(&pg_name(n))).collect();
                                format!(" ({})", names.join(", "))
                            })
                            .unwrap_or_default();
                        views.push(Step {
                            kind: "view",
                            table: None,
                            name: object.name.clone(),
                            source: object.source.clone(),
                            statements: vec![format!(
                                "CREATE VIEW {}{list} AS {select}",
                                ident(&pg_name(&object.name))
                            )],
                        });
                    }
                    Err(u) => report.push(refused(kind, None, &object.name, &object.source, u)),
                }
            }
            "trigger" | "procedure" => {
                let Some(routine) = schema.routines.find(kind, &object.name) else {
                    report.push(Untranslated {
                        kind: kind.into(),
                        table: object.table.clone(),
                        name: object.name.clone(),
                        source: object.source.clone(),
                        why: "not translated: its header is not in the catalog read".into(),
                    });
                    continue;
                };
                let translated = if kind == "trigger" {
                    psql::translate_trigger(&routine.ddl, &ctx)
                } else {
                    psql::translate_procedure(&routine.ddl, &ctx)
                };
                match translated {
                    Ok(statements) => {
                        let step = Step {
                            kind: if kind == "trigger" {
                                "trigger"
                            } else {
                                "procedure"
                            },
                            table: object.table.clone(),
                            name: object.name.clone(),
                            source: routine.ddl.clone(),
                            statements,
                        };
                        if kind == "trigger" {
                            if let Some(key) = psql::key_generator(&routine.ddl) {
                                if let Some(sequence) = sequences.get(&key.sequence) {
                                    let t = ident(&pg_name(&key.table));
                                    let c = ident(&pg_name(&key.column));
                                    let s = ident(sequence);
                                    keys.push(Step {
                                        kind: "generated key",
                                        table: object.table.clone(),
                                        name: key.column.clone(),
                                        source: routine.ddl.clone(),
                                        statements: vec![format!(
                                            "ALTER TABLE {t} ALTER COLUMN {c} SET DEFAULT nextval('{}'); \
                                             ALTER SEQUENCE {s} OWNED BY {t}.{c}",
                                            s.replace('\'', "''")
                                        )],
                                    });
                                }
                            }
                            triggers.push(step);
                        } else {
                            routines.push(step);
                        }
                    }
                    Err(u) => report.push(refused(kind, table, &object.name, &routine.ddl, u)),
                }
            }
            _ => report.push(Untranslated {
                kind: object.kind.clone(),
                table: object.table.clone(),
                name: object.name.clone(),
                source: object.source.clone(),
                why: "Firebird's own SQL".into(),
            }),
        }
    }
    // A routine that calls a procedure not made is not made either
    // (PostgreSQL would make it and fail when it runs).
    loop {
        let made: std::collections::HashSet<String> =
            routines.iter().map(|s| s.name.clone()).collect();
        let missing = |step: &Step| -> Option<String> {
            let calls = psql::routine_calls(&step.source).unwrap_or_default();
            calls.into_iter().find(|c| !made.contains(c))
        };
        let before = routines.len() + triggers.len();
        for list in [&mut routines, &mut triggers] {
            let mut kept = Vec::new();
            for step in list.drain(..) {
                match missing(&step) {
                    Some(callee) => report.push(Untranslated {
                        kind: step.kind.into(),
                        table: step.table,
                        name: step.name,
                        source: step.source,
                        why: format!("not translated: it calls {callee}, which is not"),
                    }),
                    None => kept.push(step),
                }
            }
            *list = kept;
        }
        if routines.len() + triggers.len() == before {
            break;
        }
    }
    let mut all = checks;
    all.extend(keys);
    all.extend(computed);
    all.extend(indices);
    all.extend(routines);
    all.extend(views);
    all.extend(triggers);
    (all, report)
}

/// Whether a routine's DDL runs SQL text (`EXECUTE STATEMENT`), whose
/// tables no reading of the DDL can tell.
fn runs_sql_text(ddl: &str) -> bool {
    let words: Vec<String> = ddl.split_whitespace().map(str::to_uppercase).collect();
    words
        .windows(2)
        .any(|w| w[0] == "EXECUTE" && w[1].starts_with("STATEMENT"))
}

/// An expression index (`COMPUTED BY (expr)`) or a partial one (`WHERE
/// cond`, Firebird 5) as PostgreSQL's `CREATE INDEX name ON t ((expr))`
/// / `(columns) WHERE cond`, descending where Firebird's is, and the
/// index's comment; or its Firebird source and why it does not
/// translate.
fn index_steps(
    schema: &Schema,
    table: &TableSchema,
    index: &fbunload_plan::schema::Index,
    ctx: &ExprContext,
) -> Result<Vec<Step>, (String, psql::Untranslated)> {
    let order = if index.descending { " DESC" } else { "" };
    let mut source = match &index.expression {
        Some(expression) => format!("COMPUTED BY {expression}"),
        None => index.columns.join(", "),
    };
    if let Some(condition) = &index.condition {
        source = format!("{source} {condition}");
    }
    let keys = match &index.expression {
        Some(expression) => psql::translate_index_expression(expression, ctx)
            .map(|e| format!("({e}){order}"))
            .map_err(|u| (source.clone(), u))?,
        None => {
            let columns: Vec<String> = index
                .columns
                .iter()
                .map(|c| format!("{}{order}", ident(&pg_name(c))))
                .collect();
            columns.join(", ")
        }
    };
    let condition = match &index.condition {
        Some(condition) => format!(
            " WHERE {}",
            psql::translate_index_expression(condition, ctx).map_err(|u| (source.clone(), u))?
        ),
        None => String::new(),
    };
    let name = ident(&pg_name(&index.name));
    let mut steps = vec![Step {
        kind: "index",
        table: Some(table.name.clone()),
        name: index.name.clone(),
        source: source.clone(),
        statements: vec![format!(
            "CREATE {}INDEX {name} ON {} ({keys}){condition}",
            if index.unique { "UNIQUE " } else { "" },
            ident(&pg_name(&table.name)),
        )],
    }];
    let on = format!("index {}", index.name);
    if let Some(comment) = crate::ddl::comment_of(&schema.catalog, &on) {
        steps.push(Step {
            kind: "comment",
            table: Some(table.name.clone()),
            name: on,
            source: comment.to_string(),
            statements: vec![format!(
                "COMMENT ON INDEX {name} IS {}",
                crate::ddl::sql_literal(comment)
            )],
        });
    }
    Ok(steps)
}

/// An object the translation would make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// `check constraint`, `generated key`, `computed column`, `index`
    /// (expression and partial), `comment` (on such an index),
    /// `function`, `procedure`, `view`, `trigger`.
    pub kind: String,
    pub table: Option<String>,
    pub name: String,
}

/// What a load would make and what it would report, without
/// PostgreSQL (`--plan`): PostgreSQL may still refuse some of what is
/// planned (a CHECK reading other rows, a view over a missing object).
pub fn plan(
    schema: &Schema,
    sequences: &SequenceNames,
    target: &str,
    loaded: &dyn Fn(&str) -> Option<Vec<String>>,
) -> (Vec<Planned>, Vec<Untranslated>) {
    let (steps, report) = steps(schema, sequences, target, loaded);
    let planned = steps
        .into_iter()
        .map(|s| Planned {
            kind: s.kind.into(),
            table: s.table,
            name: s.name,
        })
        .collect();
    (planned, report)
}

/// Makes what translates in `staging`; returns what it made (for the
/// catalog's accounting) and what is reported.
pub(crate) fn create(
    client: &mut Client,
    schema: &Schema,
    staging: &str,
    target: &str,
    sequences: &SequenceNames,
    loaded: &dyn Fn(&str) -> Option<Vec<String>>,
) -> (Vec<Planned>, Vec<Untranslated>) {
    let (steps, mut report) = steps(schema, sequences, target, loaded);
    let mut made = Vec::new();
    let mut pending: Vec<Step> = steps;
    // Views (and routines a view selects from) may read each other: what
    // PostgreSQL refuses is tried again while a round makes anything.
    loop {
        let mut refused = Vec::new();
        let before = pending.len();
        for step in pending {
            match make(client, staging, &step) {
                Ok(note) => {
                    made.push(Planned {
                        kind: step.kind.into(),
                        table: step.table.clone(),
                        name: step.name.clone(),
                    });
                    // Made, with something to say (a CHECK made NOT VALID).
                    if let Some(note) = note {
                        report.push(Untranslated {
                            kind: step.kind.into(),
                            table: step.table,
                            name: step.name,
                            source: step.source,
                            why: note,
                        });
                    }
                }
                Err(reason) => refused.push((step, reason)),
            }
        }
        let made_any = refused.len() < before;
        if refused.is_empty() || !made_any {
            for (step, reason) in refused {
                let why = match not_loaded_read(schema, loaded, &reason) {
                    Some(table) => {
                        format!("not made: it reads {table}, which this run did not load")
                    }
                    None => format!("PostgreSQL refused the translation: {reason}"),
                };
                report.push(Untranslated {
                    kind: step.kind.into(),
                    table: step.table,
                    name: step.name,
                    source: step.source,
                    why,
                });
            }
            break;
        }
        pending = refused.into_iter().map(|(s, _)| s).collect();
    }
    (made, report)
}

/// The Firebird table that PostgreSQL's `relation "x" does not exist`
/// names, where it is a table of the catalog this run did not load (a
/// view over a loaded table and one left out): said so, the fix is
/// plain.
fn not_loaded_read(
    schema: &Schema,
    loaded: &dyn Fn(&str) -> Option<Vec<String>>,
    reason: &str,
) -> Option<String> {
    let relation = reason
        .strip_prefix("relation \"")?
        .strip_suffix("\" does not exist")?;
    schema
        .catalog
        .objects
        .iter()
        .filter(|o| o.kind == "table" && pg_name(&o.name) == relation)
        .map(|o| o.name.clone())
        .find(|name| loaded(name).is_none())
}

/// One object, all or nothing. A CHECK the loaded rows break is added
/// `NOT VALID` (it holds for new rows, as Firebird's, which never
/// checks the rows it already has) and said so.
fn make(client: &mut Client, staging: &str, step: &Step) -> Result<Option<String>, String> {
    let run = |client: &mut Client, statements: &[String]| -> Result<(), String> {
        let mut tx = client.transaction().map_err(|e| e.to_string())?;
        tx.batch_execute(&format!(
            "SET LOCAL search_path TO {}; SET LOCAL standard_conforming_strings TO on",
            ident(staging)
        ))
        .map_err(|e| e.to_string())?;
        for sql in statements {
            tx.batch_execute(sql).map_err(|e| match e.as_db_error() {
                Some(db) => db.message().to_string(),
                None => e.to_string(),
            })?;
        }
        tx.commit().map_err(|e| e.to_string())
    };
    match run(client, &step.statements) {
        Ok(()) => Ok(None),
        Err(reason)
            if step.kind == "check constraint" && reason.contains("is violated by some row") =>
        {
            let not_valid: Vec<String> = step
                .statements
                .iter()
                .map(|s| format!("{s} NOT VALID"))
                .collect();
            run(client, &not_valid)?;
            Ok(Some(format!(
                "made NOT VALID: {reason} (it checks new and changed rows, as Firebird's does)"
            )))
        }
        // Firebird's indices have names of their own; PostgreSQL's share
        // the schema's with its tables, views and sequences.
        Err(reason) if step.kind == "index" && reason.ends_with("already exists") => {
            let taken: Vec<String> = client
                .query(
                    "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n \
                     ON n.oid = c.relnamespace WHERE n.nspname = $1",
                    &[&staging],
                )
                .map_err(|e| e.to_string())?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let wanted = pg_name(&step.name);
            let free = crate::ddl::Names::taken(taken).take(&wanted);
            let (old, new) = (
                format!("INDEX {} ", ident(&wanted)),
                format!("INDEX {} ", ident(&free)),
            );
            let renamed: Vec<String> = step
                .statements
                .iter()
                .map(|s| s.replace(&old, &new))
                .collect();
            run(client, &renamed)?;
            Ok(Some(format!(
                "made as {free}: {wanted} is another relation's name in PostgreSQL"
            )))
        }
        Err(reason) => Err(reason),
    }
}

/// A sync applies rows the source's triggers already acted on: the
/// user triggers of its tables that are enabled now are disabled for
/// the sync's transaction. Returns the SQL that disables them and the
/// SQL that enables them again, each as it was (`ALWAYS`, `REPLICA`).
pub fn hold_triggers(
    client: &mut impl postgres::GenericClient,
    schema: &str,
    tables: &[String],
) -> Result<(String, String), postgres::Error> {
    let rows = client.query(
        "SELECT c.relname, t.tgname, t.tgenabled::text FROM pg_trigger t \
         JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relname = ANY($2) AND NOT t.tgisinternal \
         AND t.tgenabled <> 'D' ORDER BY 1, 2",
        &[&schema, &tables],
    )?;
    let (mut hold, mut release) = (String::new(), String::new());
    for row in rows {
        let table = format!("{}.{}", ident(schema), ident(row.get(0)));
        let trigger = ident(row.get(1));
        let mode = match row.get::<_, String>(2).as_str() {
            "A" => "ALWAYS ",
            "R" => "REPLICA ",
            _ => "",
        };
        hold += &format!("ALTER TABLE {table} DISABLE TRIGGER {trigger};");
        release += &format!("ALTER TABLE {table} ENABLE {mode}TRIGGER {trigger};");
    }
    if !release.is_empty() {
        // PostgreSQL alters no table with trigger events pending: the
        // deferred foreign key checks run first (the rows are all in).
        release = format!("SET CONSTRAINTS ALL IMMEDIATE;{release}");
    }
    Ok((hold, release))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fbunload_plan::routines::{PsqlObject, Routines};
    use fbunload_plan::schema::{ColumnSchema, SourceObject};

    /// A procedure that reaches tables only through EXECUTE STATEMENT is
    /// made, and reported where the run left a table out.
    #[test]
    fn a_procedure_running_sql_text_is_reported_when_tables_were_left_out() {
        let ddl = "CREATE PROCEDURE \"P\" AS BEGIN EXECUTE STATEMENT 'DELETE FROM U'; END";
        let table = |name: &str| fbunload_plan::inventory::CatalogObject {
            kind: "table".into(),
            name: name.into(),
            ..Default::default()
        };
        let mut schema = Schema {
            routines: Routines {
                objects: vec![PsqlObject {
                    kind: "procedure".into(),
                    name: "P".into(),
                    table: None,
                    ddl: ddl.into(),
                }],
                ..Routines::default()
            },
            ..Schema::default()
        };
        schema.catalog.objects = vec![table("T"), table("U")];
        let sequences = SequenceNames::new();
        let reported = |loaded: &dyn Fn(&str) -> Option<Vec<String>>| {
            let (steps, report) = steps(&schema, &sequences, "app", loaded);
            assert!(steps.iter().any(|s| s.kind == "procedure" && s.name == "P"));
            report
                .iter()
                .filter(|u| u.name == "P")
                .map(|u| u.why.clone())
                .collect::<Vec<_>>()
        };
        let only_t = reported(&|t: &str| (t == "T").then(Vec::new));
        assert_eq!(only_t.len(), 1, "{only_t:?}");
        assert!(only_t[0].contains("EXECUTE STATEMENT"), "{only_t:?}");
        let both = reported(&|_: &str| Some(Vec::new()));
        assert!(both.is_empty(), "{both:?}");
    }

    #[test]
    fn objects_are_made_in_order_and_what_does_not_translate_is_reported() {
        let column = |name: &str, data_type: &str, computed: Option<&str>| ColumnSchema {
            name: name.into(),
            data_type: data_type.into(),
            computed_by: computed.map(str::to_string),
            ..ColumnSchema::default()
        };
        let key_trigger = "CREATE TRIGGER \"SET_ID\" FOR \"T\" ACTIVE BEFORE INSERT POSITION 0 \
                           AS BEGIN IF (NEW.ID IS NULL) THEN NEW.ID = GEN_ID(G, 1); END";
        let source = |kind: &str, table: Option<&str>, name: &str, source: &str| SourceObject {
            kind: kind.into(),
            table: table.map(str::to_string),
            name: name.into(),
            source: source.into(),
        };
        let schema = Schema {
            tables: vec![TableSchema {
                name: "T".into(),
                columns: vec![
                    column("ID", "INTEGER", None),
                    column("A", "TIMESTAMP", None),
                    column("B", "TIMESTAMP", None),
                    column("DAYS", "NUMERIC(18,9)", Some("(B - A)")),
                    column("NOW_DAYS", "NUMERIC(18,9)", Some("(CURRENT_TIMESTAMP - A)")),
                ],
                ..TableSchema::default()
            }],
            sources: vec![
                source("trigger", Some("T"), "SET_ID", "AS BEGIN ... END"),
                source("view", None, "V", "SELECT ID FROM T"),
                source("check constraint", Some("T"), "INTEG_1", "CHECK (A <= B)"),
                source(
                    "check constraint",
                    Some("T"),
                    "INTEG_2",
                    "CHECK (HASH(A) > 0)",
                ),
            ],
            routines: Routines {
                objects: vec![PsqlObject {
                    kind: "trigger".into(),
                    name: "SET_ID".into(),
                    table: Some("T".into()),
                    ddl: key_trigger.into(),
                }],
                view_columns: [("V".to_string(), vec!["ID".to_string()])].into(),
                ..Routines::default()
            },
            ..Schema::default()
        };
        let sequences: SequenceNames = [("G".to_string(), "g_2".to_string())].into();
        let loaded = |t: &str| (t == "T").then(Vec::new);
        let (planned, planned_report) = plan(&schema, &sequences, "app", &loaded);
        let (steps, report) = steps(&schema, &sequences, "app", &loaded);
        assert_eq!(planned.len(), steps.len());
        assert_eq!(planned[4].kind, "trigger");
        assert_eq!(planned_report, report);
        let made: Vec<(&str, &str)> = steps.iter().map(|s| (s.kind, s.name.as_str())).collect();
        assert_eq!(
            made,
            [
                ("check constraint", "INTEG_1"),
                ("generated key", "ID"),
                ("computed column", "DAYS"),
                ("view", "V"),
                ("trigger", "SET_ID"),
            ]
        );
        assert_eq!(
            steps[1].statements[0],
            "ALTER TABLE \"t\" ALTER COLUMN \"id\" SET DEFAULT nextval('\"g_2\"'); \
             ALTER SEQUENCE \"g_2\" OWNED BY \"t\".\"id\""
        );
        assert_eq!(
            steps[2].statements[0],
            "ALTER TABLE \"t\" ADD COLUMN \"days\" numeric(18,9) GENERATED ALWAYS AS \
             ((EXTRACT(EPOCH FROM \"b\" - \"a\") / 86400)) STORED"
        );
        assert_eq!(
            steps[3].statements[0],
            "CREATE VIEW \"v\" (\"id\") AS SELECT \"id\" FROM \"t\""
        );
        assert!(steps[4].statements[0].contains("SET search_path TO \"app\""));
        assert!(steps[4].statements[0].contains("NEW.\"id\" := nextval('\"g_2\"');"));
        let reported: Vec<(&str, &str, &str)> = report
            .iter()
            .map(|u| (u.kind.as_str(), u.name.as_str(), u.why.as_str()))
            .collect();
        assert_eq!(reported.len(), 2, "{reported:?}");
        assert_eq!(reported[0].1, "NOW_DAYS");
        assert!(reported[0]
            .2
            .starts_with("not translated: line 1: CURRENT_TIMESTAMP: "));
        assert_eq!(
            reported[1],
            (
                "check constraint",
                "INTEG_2",
                "not translated: line 1: HASH: Firebird's own 64-bit hash: PostgreSQL has no function giving the same numbers"
            )
        );
    }
}
