//! The Firebird side of a run: the main attachment, the plan made from its
//! catalog, the snapshot every reader joins, and reading a unit into Arrow
//! batches.
//!
//! **Joining one snapshot.** `isc_tpb_at_snapshot_number` alone does not
//! give identical views: Firebird treats every transaction numbered below
//! a transaction's *oldest interesting* (OIT) as committed, whatever its
//! commit number. A transaction that was active when the snapshot was
//! taken and commits before a reader joins can fall below that reader's
//! OIT, and the reader then sees its changes (measured: a joiner started
//! 2 ms after another at the same number saw more rows 314 times in
//! 1,000). So every reader attaches first; then the holder of the snapshot
//! and every reader's transaction start together, from one thread; and
//! each reader must report an OIT no higher than the holder's *oldest
//! active* (OAT): then every transaction a reader takes as committed had
//! already finished when the snapshot was taken, and the reader sees what
//! the holder sees. Comparing OITs with each other instead, as fbunload
//! once did, fails for ever on SuperClassic and Classic servers, where
//! each attachment keeps its own view of the OIT, and refuses harmless
//! moves of the OIT past long-dead transactions.
//!
//! Servers before Firebird 4 cannot share a snapshot or address pointer
//! pages: there the run reads with one reader in the main attachment's own
//! transaction, which is still one consistent snapshot, or, if the user
//! allows it, with a snapshot per reader, each table consistent in itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use fbunload_client::{
    Attachment, Client, ColumnDesc, ConnectOptions, Interrupter, ReadWatch, Transaction,
    TransactionMode,
};
use fbunload_decode::types::type_name_of;
use fbunload_decode::{BatchLimits, OutputColumn, RowDecoder, TypeOptions};
use fbunload_plan::query::{check_queries, column_names, describe, server_casts};
use fbunload_plan::sequences::SequenceMovers;
use fbunload_plan::{
    printable, quote_identifier, read_catalog, read_schema, read_views, Kind, Plan, PlanOptions,
    Read, TableFilter, TablePlan, Unit,
};
use fbunload_plan::{Incremental, Role};

use crate::session::{Reader, Session};
use crate::ExecError;

/// A database and how to attach to it.
#[derive(Clone)]
pub struct Database {
    pub client: Arc<Client>,
    /// The DSN, user, password and role; the connection character set is
    /// fbunload's own choice ([`TRANSPORT_CHARSET`]).
    pub connect: ConnectOptions,
}

/// The line of a table's query on which its `--where` condition begins:
/// the planner puts it on lines of its own, after `WHERE (`.
fn condition_line(sql: &str) -> usize {
    sql.find("WHERE (\n")
        .map_or(1, |at| sql[..at].matches('\n').count() + 2)
}

/// `message` with Firebird's `line N` positions counted from line `first`
/// of the statement: `line 2, column 5` of a condition that begins on line
/// 2 is `line 1, column 5` of the condition.
fn lines_from(message: &str, first: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        out.push_str(&rest[..at + 5]);
        rest = &rest[at + 5..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        match rest[..digits].parse::<usize>() {
            Ok(line) if line >= first => out.push_str(&(line + 1 - first).to_string()),
            _ => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// What Firebird says of a condition of `lines` lines beginning on line
/// `first` of fbunload's query, in the condition's own terms: positions
/// in its lines; a position past its end, where Firebird met the query
/// around it (`Token unknown - line 3, column 1; )` for `S_QUANTITY <`),
/// means it stopped too early.
fn in_condition(message: &str, first: usize, lines: usize) -> String {
    let past_end = message.match_indices("line ").any(|(at, _)| {
        let rest = &message[at + 5..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..digits]
            .parse::<usize>()
            .is_ok_and(|line| line >= first + lines)
    });
    if past_end {
        return "it ends before it is complete (Firebird expected more after its last word)".into();
    }
    lines_from(message, first)
}

/// The connection character set of every attachment: NONE, so that the
/// server converts no text and each column arrives in its own character
/// set, to be decoded exactly (see [`fbunload_decode::text`]).
pub const TRANSPORT_CHARSET: &str = "NONE";

impl Database {
    /// Attaches; readers skip garbage collection, as gbak's do: an unload
    /// should not pay for cleaning up other transactions' old versions.
    pub fn attach(&self, reader: bool) -> Result<Attachment, ExecError> {
        let connect = ConnectOptions {
            charset: TRANSPORT_CHARSET.into(),
            no_garbage_collect: reader,
            ..self.connect.clone()
        };
        Attachment::connect(&self.client, &connect).map_err(|e| ExecError::attach(&connect, e))
    }

    /// Opens `count` attachments at once (remote attaches take a round trip
    /// or more each).
    /// Their calls are watched in `group` ([`fbunload_client::ReadWatch`]).
    pub(crate) fn attach_readers(
        &self,
        count: usize,
        group: u64,
        aborted: &AtomicBool,
    ) -> Result<Vec<Attachment>, ExecError> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| self.attach_unless(group, aborted)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// A reader's attach, on a thread of its own whose calls are watched in
    /// `group`, given up on once `aborted` is set: an attach that the
    /// server never answers has no connection yet that closing could end,
    /// so its thread is left to finish (or not) alone, and detaches if it
    /// ever attaches.
    fn attach_unless(&self, group: u64, aborted: &AtomicBool) -> Result<Attachment, ExecError> {
        let (send, attached) = std::sync::mpsc::channel();
        let db = self.clone();
        std::thread::spawn(move || {
            fbunload_client::watch_reads_on_this_thread(group);
            fbunload_client::name_reads_on_this_thread("attaching a reader");
            let _ = send.send(db.attach(true));
        });
        loop {
            match attached.recv_timeout(Duration::from_millis(20)) {
                Ok(result) => return result,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if aborted.load(Ordering::SeqCst) {
                        return Err(ExecError::Server(
                            "an attach was given up on: the run closed its connections".into(),
                        ));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ExecError::Internal("an attaching thread ended".into()))
                }
            }
        }
    }
}

/// How the readers of a run see one state of the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// Firebird 4 and later: every reader joins the main attachment's
    /// snapshot.
    SharedSnapshot,
    /// Firebird 3: one reader, in the main attachment's transaction.
    OneTransaction,
    /// Firebird 3 with `allow_inconsistent`: a snapshot per reader; every
    /// table (a unit of its own there) is consistent in itself, the
    /// tables are not mutually consistent.
    SnapshotPerReader,
}

/// What every reader needs to turn a unit into batches.
pub(crate) struct ReadContext {
    pub plan: Arc<Plan>,
    pub schemas: Arc<Vec<SchemaRef>>,
    pub types: TypeOptions,
    pub batch: BatchLimits,
    /// The group its readers' calls are watched in
    /// ([`fbunload_client::new_read_group`]).
    pub read_group: u64,
}

/// Reads the catalog in a short transaction of its own and plans: the
/// plan only needs names, columns and page counts, and the last unit of
/// every table is open-ended, so pages added later are still read. Each
/// table's select is prepared once, here, to learn its Arrow schema.
pub(crate) fn plan(
    main: &Attachment,
    filter: &TableFilter,
    options: PlanOptions,
    split_tables: bool,
    types: &TypeOptions,
    blob_workers: Option<usize>,
) -> Result<(Plan, Vec<SchemaRef>), ExecError> {
    let tr = main
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .map_err(ExecError::Client)?;
    let (mut plan, schemas) = plan_in(&tr, filter, options, split_tables, types)?;
    // Tables of mostly BLOBs cut by their BLOB bytes, for these workers.
    if let Some(workers) = blob_workers {
        crate::estimate::split_blob_tables(&tr, &mut plan, workers)?;
    }
    Ok((plan, schemas))
}

/// [`plan`] in a transaction of the caller's: the catalog as it sees it.
pub(crate) fn plan_in(
    tr: &Transaction,
    filter: &TableFilter,
    options: PlanOptions,
    split_tables: bool,
    types: &TypeOptions,
) -> Result<(Plan, Vec<SchemaRef>), ExecError> {
    let mut catalog = read_catalog(tr, filter)?;
    let conditions = fbunload_plan::selection::apply(&filter.selection, &mut catalog)
        .map_err(|e| ExecError::Usage(e.to_string()))?;
    let options = PlanOptions {
        split_tables,
        page_size: tr.attachment().page_size().map_err(ExecError::Client)?,
        trim_char_on_server: tr.attachment().is_remote(),
        literals: types.none_text,
        ..options
    };
    let reads_user_sql = filter.views.is_some() || !filter.queries.is_empty();
    let movers = if reads_user_sql || conditions.iter().any(Option::is_some) {
        SequenceMovers::read(tr).map_err(ExecError::Client)?
    } else {
        SequenceMovers::default()
    };
    for (table, condition) in catalog.iter().zip(&conditions) {
        if let Some(why) = condition
            .as_deref()
            .and_then(|c| movers.text(c, Some(&table.name)))
        {
            return Err(ExecError::Usage(format!(
                "--where for table {}: {why}; a run does not move sequences, so leave it out of \
                 the condition",
                printable(&table.name)
            )));
        }
    }
    let plan = Plan::new(&catalog, options).with_conditions(conditions);
    let reads = views_and_queries(tr, filter, &plan, &options, &movers)?;
    let plan = plan.with_reads(reads, options);
    let schemas = plan
        .tables
        .iter()
        .enumerate()
        .map(|(index, table)| {
            if let Some(described) = catalog_described(table, catalog.get(index), &options) {
                return schema_from(table, &described, types);
            }
            let stmt = tr
                .prepare_for(&subject(table), &table.select_sql())
                .map_err(|e| {
                    match (&table.condition, table.kind) {
                        // The condition is the only part of the query the user wrote:
                        // positions are given in its lines, not in fbunload's query.
                        (Some(condition), _) => ExecError::Usage(format!(
                            "--where for table {}: {condition:?} is not a condition Firebird \
                             accepts: {}",
                            printable(&table.name),
                            in_condition(
                                &e.to_string(),
                                condition_line(&table.select_sql()),
                                condition.lines().count().max(1)
                            )
                        )),
                        (None, Kind::Query) => refused_query(table, e),
                        (None, _) => ExecError::from_client(&table.name, e),
                    }
                })?;
            let schema = schema_from(table, stmt.columns(), types)?;
            // Only a query's (few) entries look for their units: for each of
            // thousands of tables that would go over every unit of the plan.
            let split_query = (table.kind == Kind::Query)
                .then(|| plan.units_of(index).find(|u| u.end_slot.is_some()))
                .flatten();
            if let Some(unit) = split_query {
                // A split query's units read it rewritten: Firebird judges
                // that form now, before anything is written.
                let stmt = tr
                    .prepare_for(&subject(table), &table.unit_sql(unit))
                    .map_err(|e| refused_query(table, e))?;
                output_columns(table, stmt.columns(), types)?;
                refuse_rows_without_driving_rows(tr, table)?;
            }
            Ok(schema)
        })
        .collect::<Result<_, ExecError>>()?;
    match (&filter.incremental, &filter.resumable) {
        (Some(incremental), _) => {
            plan_incremental(tr, incremental, &catalog, plan, schemas, options, types)
        }
        (None, Some(resumable)) => plan_resumable(tr, resumable, plan, schemas, options, types),
        (None, None) => Ok((plan, schemas)),
    }
}

/// The database's GUID and file id, by which a later run knows it reads
/// the same database (not a restore, a copy or another file). Refused
/// before Firebird 4, which has no commit numbers nor shared snapshots
/// for `options_named` to work with.
fn database_identity(
    tr: &Transaction,
    options: PlanOptions,
    options_named: &str,
) -> Result<(String, String), ExecError> {
    use fbunload_plan::incremental as inc;
    if !options.split_tables {
        return Err(ExecError::Usage(format!(
            "{options_named} need Firebird 4 or later (commit numbers and shared snapshots); \
             this server has neither"
        )));
    }
    let guid = inc::read_database_guid(tr).map_err(ExecError::Client)?;
    let file_id = inc::read_database_file_id(tr).map_err(ExecError::Client)?;
    Ok((guid, file_id))
}

/// Makes a plan resumable (see [`fbunload_plan::incremental::Resumable`]):
/// its snapshot's marks are taken, as for `--keep-keys`; resuming, each
/// unit the stopped run finished is counted instead of read, unless the
/// database is no longer the one it read (restored, replaced, a copy).
fn plan_resumable(
    tr: &Transaction,
    resumable: &fbunload_plan::incremental::Resumable,
    mut plan: Plan,
    mut schemas: Vec<SchemaRef>,
    options: PlanOptions,
    types: &TypeOptions,
) -> Result<(Plan, Vec<SchemaRef>), ExecError> {
    use fbunload_plan::incremental as inc;
    let (guid, file_id) = database_identity(tr, options, "--resumable and --resume")?;
    let client = |e| ExecError::Client(e);
    plan.row_places = Some(row_places(tr)?);
    if let Some(first) = &resumable.first {
        let now = inc::read_database_now(tr, &guid, &file_id, first.commit_mark).map_err(client)?;
        if inc::whole_database_reason(first, &now).is_none() {
            let checks: Vec<_> = plan
                .tables
                .iter()
                .enumerate()
                .filter(|(_, t)| t.kind == Kind::Table && t.condition.is_none())
                .map(|(of, t)| {
                    let finished: Vec<(u64, Option<u64>)> = resumable
                        .finished
                        .iter()
                        .filter(|(name, _, _)| *name == t.name)
                        .map(|(_, first, end)| (*first, *end))
                        .collect();
                    fbunload_plan::ResumeCheck {
                        of,
                        finished,
                        select: inc::resume_check_select(&t.name, first),
                    }
                })
                .filter(|check| !check.finished.is_empty())
                .collect();
            let before = plan.tables.len();
            plan = plan.with_resume_checks(checks);
            for table in &plan.tables[before..] {
                let stmt = tr
                    .prepare_for(&subject(table), &table.select_sql())
                    .map_err(|e| ExecError::from_client(&table.name, e))?;
                schemas.push(schema_from(table, stmt.columns(), types)?);
            }
        }
    }
    plan.database_guid = Some(guid);
    plan.database_file_id = Some(file_id);
    Ok((plan, schemas))
}

/// Makes a plan of whole tables incremental (see
/// [`fbunload_plan::incremental`]): each table with a primary key gets an
/// entry that reads its keys; with `since`, each table whose change can
/// be read reads only the rows changed since, the others are read whole
/// and say why.
fn plan_incremental(
    tr: &Transaction,
    incremental: &Incremental,
    catalog: &[fbunload_plan::Table],
    mut plan: Plan,
    mut schemas: Vec<SchemaRef>,
    options: PlanOptions,
    types: &TypeOptions,
) -> Result<(Plan, Vec<SchemaRef>), ExecError> {
    use fbunload_plan::incremental as inc;
    let (guid, file_id) = database_identity(tr, options, "--since and --keep-keys")?;
    let client = |e| ExecError::Client(e);
    let primary_keys = inc::read_primary_keys(tr).map_err(client)?;
    let formats = inc::read_table_formats(tr).map_err(client)?;
    let whole_database = match &incremental.since {
        Some(since) => {
            let now =
                inc::read_database_now(tr, &guid, &file_id, since.commit_mark).map_err(client)?;
            inc::whole_database_reason(since, &now)
        }
        None => None,
    };
    let mut keys = Vec::new();
    for (index, table) in catalog.iter().enumerate() {
        let entry = &mut plan.tables[index];
        debug_assert_eq!(entry.name, table.name);
        let primary_key = primary_keys.get(&table.name).cloned().unwrap_or_default();
        if let Some(since) = &incremental.since {
            let columns: Vec<(String, String, String)> = entry
                .columns
                .iter()
                .zip(&entry.declared_types)
                .zip(schemas[index].fields())
                .map(|((name, declared), field)| {
                    (
                        name.clone(),
                        declared.clone(),
                        field.data_type().to_string(),
                    )
                })
                .collect();
            let mode = match &whole_database {
                Some(reason) => inc::TableMode::Whole(reason.clone()),
                None => inc::table_mode(
                    since,
                    &table.name,
                    &columns,
                    &primary_key,
                    formats.get(&table.name).copied(),
                ),
            };
            match mode {
                inc::TableMode::Changes => {
                    entry.condition = Some(inc::changed_condition(since));
                    entry.role = Role::Upserts;
                }
                inc::TableMode::Whole(reason) => entry.role = Role::WholeBecause(reason),
            }
        }
        let key_columns: Option<Vec<_>> = primary_key
            .iter()
            .map(|name| table.columns.iter().find(|c| c.name == *name).cloned())
            .collect();
        if let Some(key_columns) = key_columns.filter(|k| !k.is_empty()) {
            let key_table = fbunload_plan::Table {
                columns: key_columns,
                ..table.clone()
            };
            keys.push((index, key_table));
        }
    }
    let unchanged = incremental
        .since
        .as_ref()
        .map(inc::unchanged_condition)
        .unwrap_or_default();
    let before = plan.tables.len();
    let mut plan = plan.with_kept_keys(keys, catalog, &unchanged, options);
    // Every entry that now reads a DB_KEY, or is new, is described again.
    for (index, table) in plan.tables.iter().enumerate() {
        if index >= before || !table.key_columns.is_empty() {
            let schema = match catalog_described(table, catalog.get(index), &options) {
                Some(described) => schema_from(table, &described, types)?,
                None => {
                    let stmt = tr
                        .prepare_for(&subject(table), &table.select_sql())
                        .map_err(|e| ExecError::from_client(&table.name, e))?;
                    schema_from(table, stmt.columns(), types)?
                }
            };
            if index < before {
                schemas[index] = schema;
            } else {
                schemas.push(schema);
            }
        }
    }
    plan.database_guid = Some(guid);
    plan.database_file_id = Some(file_id);
    plan.table_formats = formats;
    plan.row_places = Some(row_places(tr)?);
    Ok((plan, schemas))
}

/// Where this server puts rows (see [`fbunload_plan::RowPlaces`]).
fn row_places(tr: &Transaction) -> Result<fbunload_plan::RowPlaces, ExecError> {
    let (places, probe) =
        fbunload_plan::incremental::read_row_places(tr).map_err(ExecError::Client)?;
    places.ok_or_else(|| {
        ExecError::Server(format!(
            "this server lays out its DB_KEYs in a way fbunload does not know ({probe:02x?}), \
             so --since and --keep-keys cannot tell where rows lie"
        ))
    })
}

/// What the server would describe for a whole table's read, from its
/// catalog entry (see [`fbunload_plan::planner::described_columns`]), so
/// that the plan need not prepare it; `None` where the plan prepares it:
/// views, queries, a `--where` (Firebird judges the condition now, before
/// anything is written), counts, a table the user may read only through
/// grants (a missing privilege is refused now too) and a column whose
/// description only the server knows.
fn catalog_described(
    table: &TablePlan,
    catalog: Option<&fbunload_plan::Table>,
    options: &PlanOptions,
) -> Option<Vec<ColumnDesc>> {
    let catalog = catalog.filter(|c| c.name == table.name && c.readable_by_user)?;
    if table.kind != Kind::Table || table.condition.is_some() || table.count_buckets > 0 {
        return None;
    }
    let mut described =
        fbunload_plan::planner::described_columns(catalog, options.trim_char_on_server)?;
    if described.len() != table.columns.len() {
        return None;
    }
    if !table.key_columns.is_empty() {
        described.push(fbunload_plan::planner::described_db_key());
    }
    Some(described)
}

/// The Arrow schema of what the read of `table` returns, as `described`.
fn schema_from(
    table: &TablePlan,
    described: &[ColumnDesc],
    types: &TypeOptions,
) -> Result<SchemaRef, ExecError> {
    Ok(Arc::new(Schema::new(
        output_columns(table, described, types)?
            .iter()
            .map(OutputColumn::arrow_field)
            .collect::<Vec<_>>(),
    )))
}

/// How a prepare that waits names what it reads (see
/// [`fbunload_client::longest_prepare`]): `table STOCK`, `view V`.
pub(crate) fn subject(table: &TablePlan) -> String {
    format!("{} {}", table.kind.as_str(), printable(&table.name))
}

/// The views `--views` selects and the `--query`s, described by the
/// server, to join the plan of the tables after them.
fn views_and_queries(
    tr: &Transaction,
    filter: &TableFilter,
    tables: &Plan,
    options: &PlanOptions,
    movers: &SequenceMovers,
) -> Result<Vec<Read>, ExecError> {
    let mut reads = Vec::new();
    if let Some(pattern) = &filter.views {
        for view in read_views(tr, pattern)? {
            if let Some(why) = movers.view(&view.name) {
                return Err(ExecError::Usage(format!(
                    "--views: view {}: {why}; a run does not move sequences, so leave the view \
                     out (--views takes a SIMILAR TO pattern, or give --query with what you \
                     need of it)",
                    printable(&view.name)
                )));
            }
            let list: Vec<String> = view.columns.iter().map(|c| quote_identifier(c)).collect();
            let sql = format!(
                "SELECT {} FROM {}",
                list.join(", "),
                quote_identifier(&view.name)
            );
            let subject = format!("view {}", printable(&view.name));
            let described =
                describe(tr, &subject, &sql).map_err(|e| ExecError::from_client(&view.name, e))?;
            reads.push(Read {
                kind: Kind::View,
                columns: view.columns,
                declared_types: described.iter().map(type_name_of).collect(),
                casts: server_casts(&described),
                driving: None,
                name: view.name,
                sql,
            });
        }
    }
    let usage = |e: fbunload_plan::QueryError| ExecError::Usage(e.to_string());
    let drivings = check_queries(&filter.queries).map_err(usage)?;
    for (spec, driving) in filter.queries.iter().zip(drivings) {
        let name = printable(&spec.name);
        if let Some(why) = movers.text(&spec.sql, None) {
            return Err(ExecError::Usage(format!(
                "--query {name}: {why}; a run does not move sequences, so leave it out of the query"
            )));
        }
        let taken = |n: &str| n == spec.name;
        if tables.tables.iter().any(|t| taken(&t.name)) || reads.iter().any(|r| taken(&r.name)) {
            return Err(ExecError::Usage(format!(
                "--name {name}: a table or view of that name is unloaded too, and their files \
                 would clash; give the query another name"
            )));
        }
        // As every unit will read it: comments blanked (see fbunload_plan::query),
        // literals in a character set that holds them.
        let sent = fbunload_plan::for_the_engine(&spec.sql, &options.literals);
        let described = describe(tr, &format!("query {name}"), &sent)
            .map_err(|e| ExecError::Usage(format!("--query {name}: Firebird refuses it: {e}")))?;
        let columns = column_names(&described);
        let driving = match driving {
            None => None,
            Some(driving) => match fbunload_plan::catalog::read_table(tr, &driving.table)? {
                Some(table) => Some((driving, table)),
                None => {
                    let what = fbunload_plan::catalog::relation_kind(tr, &driving.table)?
                        .unwrap_or("no such table");
                    return Err(ExecError::Usage(format!(
                        "--query {name}: --split-by {}: {what}; only a user table's DB_KEY \
                         ranges can split a query: name another table, or leave out --split-by",
                        printable(&driving.table)
                    )));
                }
            },
        };
        reads.push(Read {
            name: spec.name.clone(),
            kind: Kind::Query,
            sql: spec.sql.clone(),
            columns,
            declared_types: described.iter().map(type_name_of).collect(),
            casts: server_casts(&described),
            driving,
        });
    }
    Ok(reads)
}

/// Refuses a split query that returns a row from none of its driving
/// table's rows (see [`TablePlan::without_driving_rows_sql`]): each unit
/// would return that row again.
fn refuse_rows_without_driving_rows(tr: &Transaction, table: &TablePlan) -> Result<(), ExecError> {
    let Some(sql) = table.without_driving_rows_sql() else {
        return Ok(());
    };
    let mut stmt = tr
        .prepare_for(&subject(table), &sql)
        .map_err(|e| refused_query(table, e))?;
    let returns_a_row = stmt
        .execute()
        .and_then(|()| stmt.fetch())
        .map_err(|e| refused_query(table, e))?;
    if returns_a_row {
        return Err(ExecError::Usage(format!(
            "--query {}: --split-by {}: the query returns a row even from none of the table's \
             rows, so each unit would return it again (an aggregate of the outer query's \
             columns inside a subquery aggregates the whole query); leave out --split-by to \
             read the query as one unit",
            printable(&table.name),
            printable(table.split_by.as_deref().unwrap_or_default())
        )));
    }
    Ok(())
}

/// A query Firebird would not prepare, as the user's mistake.
fn refused_query(table: &TablePlan, e: fbunload_client::ClientError) -> ExecError {
    ExecError::Usage(format!(
        "--query {}: Firebird refuses it: {e}",
        printable(&table.name)
    ))
}

/// The columns a prepared select of `table` returns, mapped to Arrow.
fn output_columns(
    table: &TablePlan,
    described: &[ColumnDesc],
    types: &TypeOptions,
) -> Result<Vec<OutputColumn>, ExecError> {
    // A table that keeps its keys reads its rows' DB_KEY last.
    let db_key = !table.key_columns.is_empty();
    if described.len() != table.columns.len() + usize::from(db_key) {
        return Err(ExecError::table(
            &table.name,
            "the table's columns changed while it was being read; run fbunload again",
        ));
    }
    let names = table
        .columns
        .iter()
        .map(String::as_str)
        .chain(db_key.then_some(fbunload_plan::DB_KEY_COLUMN));
    described
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (desc, column))| {
            let declared = table.declared_types.get(i).map(String::as_str);
            let array = table.arrays.get(i).and_then(Option::as_ref);
            // Read as bytes (CHARACTER SET NONE), decoded in its own.
            let mut desc = desc.clone();
            if let Some(Some(charset)) = table.byte_charsets.get(i) {
                desc.subtype = i16::from(*charset);
            }
            OutputColumn::with_array(column, &desc, declared, array, types)
                .map_err(|m| ExecError::table(&table.name, format!("column {column}: {m}")))
        })
        .collect()
}

/// The first column a reader's schema `read` has otherwise than the
/// `planned` one, said in a few words; `None` when they are the same.
fn unlike_planned(read: &Schema, planned: &Schema) -> Option<String> {
    if read.fields() == planned.fields() {
        return None;
    }
    if read.fields().len() != planned.fields().len() {
        return Some(format!(
            "{} columns, {} planned",
            read.fields().len(),
            planned.fields().len()
        ));
    }
    let (read, planned) = read
        .fields()
        .iter()
        .zip(planned.fields())
        .find(|(read, planned)| read != planned)?;
    let said = |f: &arrow_schema::Field| {
        let null = if f.is_nullable() { "" } else { " NOT NULL" };
        format!("{} {}{null}", f.name(), f.data_type())
    };
    Some(format!(
        "column {}, {} planned",
        printable(&said(read)),
        printable(&said(planned))
    ))
}

/// A read-only transaction on `attachment` at snapshot `number`.
pub(crate) fn start_at_snapshot(
    attachment: &Attachment,
    number: u64,
) -> Result<Transaction, ExecError> {
    attachment
        .start_transaction(TransactionMode::ReadOnlyAtSnapshot(number))
        .map_err(|e| ExecError::Server(format!("a reader cannot join snapshot {number}: {e}")))
}

/// Attempts at a snapshot whose readers all see what its holder sees.
const JOIN_ATTEMPTS: usize = 20;

/// The shared snapshot, once joined.
struct Joined {
    number: u64,
    /// Keeps the snapshot alive for the whole run.
    _holder: Transaction,
    /// At the snapshot too, on the main attachment, for `--verify`.
    reference: Transaction,
    /// The holder's oldest active transaction: no reader may take a
    /// transaction from there on as committed (module docs).
    oldest_active: u64,
    /// What the next incremental run needs of this one, if it keeps keys.
    marks: Option<SnapshotMarks>,
}

/// The transaction that holds a run's shared snapshot: what an
/// incremental run after it needs (see [`fbunload_plan::incremental`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotMarks {
    /// The oldest interesting transaction it saw when it started, before
    /// its snapshot was taken.
    pub oldest_interesting: u64,
    /// The oldest transaction the snapshot may not have seen committed
    /// ("The bound" in [`fbunload_plan::incremental`]).
    pub oldest_unseen: u64,
    /// Transactions below it the snapshot did not see committed either.
    pub unseen_below: Vec<u64>,
    /// Its own number.
    pub transaction: u64,
    /// A transaction of the run that committed, and its commit number
    /// then: the same database in the same engine lifetime gives the
    /// same again; another history another. `None` unless the engine
    /// gave a number of this lifetime (2 or more).
    pub probe: u64,
    pub probe_commit_number: Option<i64>,
}

/// A run's hold on a Firebird database.
pub(crate) struct FirebirdSession {
    pub(crate) db: Database,
    pub(crate) context: Arc<ReadContext>,
    main: Attachment,
    consistency: Consistency,
    joined: OnceLock<Joined>,
    /// [`Consistency::OneTransaction`]: the main transaction, which the one
    /// reader reads in and `--verify` counts in.
    one: OnceLock<Arc<Transaction>>,
    /// Every attachment of the run, to interrupt them all. Weak: a
    /// worker's attachment goes when its worker is done, so the locks the
    /// server keeps for it (its cached statements pin the tables it read)
    /// do not make another user's DROP or ALTER of those tables wait for
    /// the whole run, nor that DROP make `--verify` wait for it.
    attachments: Mutex<Vec<Interrupter>>,
    /// The readers' calls into the client library, for
    /// [`Session::longest_read`].
    reads: Mutex<ReadWatch>,
    /// Set once [`Session::abort`] closed the connections: an attach still
    /// under way then is given up on.
    aborted: Arc<AtomicBool>,
}

impl FirebirdSession {
    pub fn new(
        db: Database,
        main: Attachment,
        consistency: Consistency,
        context: ReadContext,
    ) -> Self {
        FirebirdSession {
            db,
            reads: Mutex::new(ReadWatch::of_group(context.read_group)),
            attachments: Mutex::new(vec![main.interrupter()]),
            main,
            consistency,
            context: Arc::new(context),
            joined: OnceLock::new(),
            one: OnceLock::new(),
            aborted: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The shared snapshot's transaction's marks, once it is taken.
    pub(crate) fn snapshot_marks(&self) -> Option<SnapshotMarks> {
        self.joined.get().and_then(|j| j.marks.clone())
    }

    fn reader(&self, tr: Arc<Transaction>) -> FirebirdReader {
        FirebirdReader::new(tr, self.context.clone())
    }

    fn attach_reader(&self) -> Result<Attachment, ExecError> {
        let attachment = self
            .db
            .attach_unless(self.context.read_group, &self.aborted)?;
        self.attachments
            .lock()
            .unwrap()
            .push(attachment.interrupter());
        Ok(attachment)
    }

    /// Starts the holder and, right after, every reader's transaction at
    /// its snapshot number, from this thread, until all of them see what
    /// the holder sees (module docs).
    fn join(&self, readers: &[Attachment]) -> Result<Vec<Transaction>, ExecError> {
        self.join_with(readers.len(), |number| {
            let transactions = readers
                .iter()
                .map(|att| start_at_snapshot(att, number))
                .collect::<Result<Vec<_>, _>>()?;
            let oldest = transactions
                .iter()
                .map(|tr| tr.oldest_interesting().map_err(ExecError::Client))
                .collect::<Result<_, _>>()?;
            Ok((transactions, oldest))
        })
    }

    /// Takes the run's snapshot: starts the holder, then `start(number)`
    /// starts the transactions of `readers` readers at its number (in this
    /// process or in reader processes) and returns them with each one's
    /// oldest interesting transaction; tried again until every reader sees
    /// what the holder sees (module docs).
    pub(crate) fn join_with<T>(
        &self,
        readers: usize,
        mut start: impl FnMut(u64) -> Result<(T, Vec<u64>), ExecError>,
    ) -> Result<T, ExecError> {
        for _ in 0..JOIN_ATTEMPTS {
            // An incremental run's probe: started before the snapshot,
            // alive until its bound is known (module docs of
            // fbunload_plan::incremental, "The bound").
            let probe = match self.context.plan.row_places {
                Some(_) => Some(
                    self.main
                        .start_transaction(TransactionMode::ReadOnlySnapshot)
                        .map_err(ExecError::Client)?,
                ),
                None => None,
            };
            let holder = self
                .main
                .start_transaction(TransactionMode::HoldingSnapshot)
                .or_else(|_| {
                    self.main
                        .start_transaction(TransactionMode::ReadOnlySnapshot)
                })
                .map_err(ExecError::Client)?;
            let number = holder.snapshot_number().map_err(ExecError::Client)?;
            let oldest_active = holder.oldest_active().map_err(ExecError::Client)?;
            let (started, oldest) = start(number)?;
            let reference = start_at_snapshot(&self.main, number)?;
            let reference_oldest = reference.oldest_interesting().map_err(ExecError::Client)?;
            let agree = oldest
                .iter()
                .chain([&reference_oldest])
                .all(|oit| *oit <= oldest_active);
            if agree {
                let marks = match probe {
                    Some(probe) => Some(self.marks(&holder, probe, number)?),
                    None => None,
                };
                let _ = self.joined.set(Joined {
                    marks,
                    number,
                    _holder: holder,
                    reference,
                    oldest_active,
                });
                return Ok(started);
            }
        }
        Err(ExecError::Server(format!(
            "could not start {} transactions that see the same snapshot in {JOIN_ATTEMPTS} \
             attempts: transactions that were running when the snapshot was taken keep \
             committing in between. Try again, or with fewer workers",
            readers + 1
        )))
    }

    /// What the next incremental run needs of the snapshot `holder` took
    /// (number `number`), with `probe` started right before it.
    fn marks(
        &self,
        holder: &Transaction,
        probe: Transaction,
        number: u64,
    ) -> Result<SnapshotMarks, ExecError> {
        use fbunload_plan::incremental as inc;
        let client = ExecError::Client;
        let transaction = holder.number().map_err(client)?;
        let around = inc::Around {
            probe: probe.number().map_err(client)?,
            probe_oldest_active: probe.oldest_active().map_err(client)?,
            probe_oldest_snapshot: probe.oldest_snapshot().map_err(client)?,
            transaction,
            snapshot_number: number,
        };
        let (oldest_unseen, unseen_below) = inc::read_unseen(holder, &around).map_err(client)?;
        probe.commit().map_err(client)?;
        let probe_commit_number = inc::read_commit_number(holder, around.probe)
            .map_err(client)?
            .filter(|cn| *cn >= 2);
        let oldest_interesting = holder.oldest_interesting().map_err(client)?;
        // Below the oldest interesting transaction every one committed
        // before the snapshot was taken.
        let unseen_below = unseen_below
            .into_iter()
            .filter(|t| *t >= oldest_interesting)
            .collect();
        Ok(SnapshotMarks {
            oldest_interesting,
            oldest_unseen: oldest_unseen.max(oldest_interesting),
            unseen_below,
            transaction,
            probe: around.probe,
            probe_commit_number,
        })
    }

    /// The DDL of the plan's tables (`schema.sql`), read at the run's
    /// snapshot so that it describes the data read; where readers have
    /// snapshots of their own (Firebird 3, `--allow-inconsistent`), in one
    /// more.
    fn schema_at_snapshot(
        &self,
        plan: &Plan,
    ) -> Result<Option<fbunload_plan::schema::Schema>, ExecError> {
        let names: Vec<String> = plan
            .tables
            .iter()
            .filter(|t| t.kind == Kind::Table && !t.role.is_helper())
            .map(|t| t.name.clone())
            .collect();
        if names.is_empty() {
            // Views and queries have no DDL of their own to recreate.
            return Ok(None);
        }
        let own;
        let tr = match self.counting_transaction() {
            Some(tr) => tr,
            None => {
                own = self
                    .main
                    .start_transaction(TransactionMode::ReadOnlySnapshot)
                    .map_err(ExecError::Client)?;
                &own
            }
        };
        let schema = read_schema(tr, &names).map_err(|e| {
            ExecError::Server(format!(
                "reading the tables' DDL for schema.sql failed ({e}); --no-schema skips it"
            ))
        })?;
        Ok(Some(schema))
    }

    /// The transaction `--verify` counts in.
    fn counting_transaction(&self) -> Option<&Transaction> {
        match self.consistency {
            Consistency::SharedSnapshot => self.joined.get().map(|j| &j.reference),
            Consistency::OneTransaction => self.one.get().map(|one| &**one),
            Consistency::SnapshotPerReader => None,
        }
    }

    /// [`Session::readers`], its calls watched by the caller.
    fn start_readers(&self, count: usize) -> Result<Vec<FirebirdReader>, ExecError> {
        match self.consistency {
            Consistency::SharedSnapshot => {
                let attachments =
                    self.db
                        .attach_readers(count, self.context.read_group, &self.aborted)?;
                self.attachments
                    .lock()
                    .unwrap()
                    .extend(attachments.iter().map(Attachment::interrupter));
                let transactions = self.join(&attachments)?;
                Ok(transactions
                    .into_iter()
                    .map(|tr| self.reader(Arc::new(tr)))
                    .collect())
            }
            Consistency::OneTransaction => {
                let tr = Arc::new(
                    self.main
                        .start_transaction(TransactionMode::ReadOnlySnapshot)
                        .map_err(ExecError::Client)?,
                );
                let _ = self.one.set(tr.clone());
                Ok(vec![self.reader(tr)])
            }
            Consistency::SnapshotPerReader => {
                let attachments =
                    self.db
                        .attach_readers(count, self.context.read_group, &self.aborted)?;
                self.attachments
                    .lock()
                    .unwrap()
                    .extend(attachments.iter().map(Attachment::interrupter));
                attachments
                    .iter()
                    .map(|att| {
                        let tr = att
                            .start_transaction(TransactionMode::ReadOnlySnapshot)
                            .map_err(ExecError::Client)?;
                        Ok(self.reader(Arc::new(tr)))
                    })
                    .collect()
            }
        }
    }
}

impl Session for FirebirdSession {
    type Reader = FirebirdReader;

    /// The calls of this thread and of the attaching threads are watched
    /// meanwhile, as the readers' are.
    fn readers(&self, count: usize) -> Result<Vec<FirebirdReader>, ExecError> {
        fbunload_client::watch_reads_on_this_thread(self.context.read_group);
        fbunload_client::name_reads_on_this_thread("joining the snapshot");
        let readers = self.start_readers(count);
        fbunload_client::stop_watching_reads_on_this_thread();
        readers
    }

    /// A new attachment and transaction for a redo. At a shared snapshot
    /// it sees the same data only if its OIT is not above the holder's
    /// OAT (module docs).
    fn rejoin(&self) -> Result<FirebirdReader, ExecError> {
        let tr = match (self.consistency, self.joined.get()) {
            (Consistency::SharedSnapshot, Some(joined)) => {
                let number = joined.number;
                let tr = self
                    .attach_reader()?
                    .start_transaction(TransactionMode::ReadOnlyAtSnapshot(number))
                    .map_err(|e| {
                        ExecError::Server(format!("a reader cannot rejoin snapshot {number}: {e}"))
                    })?;
                if tr.oldest_interesting().map_err(ExecError::Client)? > joined.oldest_active {
                    return Err(ExecError::Server(format!(
                        "a reader's connection was lost, and its unit cannot be redone at \
                         snapshot {number}: transactions that were running when the snapshot \
                         was taken have committed since, and Firebird would show some of their \
                         changes to a transaction joining the snapshot now. The run stopped \
                         and nothing of it was kept; run fbunload again"
                    )));
                }
                tr
            }
            (Consistency::SnapshotPerReader, _) => self
                .attach_reader()?
                .start_transaction(TransactionMode::ReadOnlySnapshot)
                .map_err(ExecError::Client)?,
            _ => {
                return Err(ExecError::Server(
                    "the connection was lost, and this server cannot share the run's \
                     snapshot with a new one; run fbunload again"
                        .into(),
                ))
            }
        };
        Ok(self.reader(Arc::new(tr)))
    }

    fn snapshot_number(&self) -> Option<u64> {
        self.joined.get().map(|j| j.number)
    }

    fn snapshot_marks(&self) -> Option<SnapshotMarks> {
        self.joined.get().and_then(|j| j.marks.clone())
    }

    fn schema(&self, plan: &Plan) -> Result<Option<fbunload_plan::schema::Schema>, ExecError> {
        self.schema_at_snapshot(plan)
    }

    fn check(&self) -> Result<(), ExecError> {
        if self.consistency != Consistency::SharedSnapshot {
            // There a lost main attachment is its reader's error, or moot.
            return Ok(());
        }
        // Watched as the workers' calls are: a server that stops answering
        // must not hold the coordinator either.
        fbunload_client::watch_reads_on_this_thread(self.context.read_group);
        fbunload_client::name_reads_on_this_thread("checking the snapshot");
        let answered = self.main.ping();
        fbunload_client::stop_watching_reads_on_this_thread();
        answered.map_err(|e| {
            ExecError::Server(format!(
                "the main attachment was lost ({e}); the shared snapshot is gone, so the run \
                 stopped. Tables finished before are complete; unfinished ones were removed. \
                 Run fbunload again"
            ))
        })
    }

    fn count(&self, table: usize) -> Result<u64, ExecError> {
        let table = &self.context.plan.tables[table];
        let tr = self
            .counting_transaction()
            .ok_or_else(|| ExecError::Usage("--verify needs one snapshot for all tables".into()))?;
        let counted = (|| {
            let mut stmt = tr.prepare_for(&subject(table), &table.count_sql())?;
            stmt.execute()?;
            stmt.fetch()?;
            let value = stmt.row().value(0).unwrap_or(&[0; 8]);
            Ok::<_, fbunload_client::ClientError>(i64::from_ne_bytes(
                value.try_into().unwrap_or([0; 8]),
            ))
        })()
        .map_err(|e| {
            ExecError::table(&table.name, format!("--verify could not count rows: {e}"))
        })?;
        Ok(counted.max(0) as u64)
    }

    fn interrupt(&self) {
        for attachment in self.attachments.lock().unwrap().iter() {
            attachment.cancel_operation();
        }
    }

    fn longest_read(&self) -> Option<(String, Duration)> {
        let read = self.reads.lock().unwrap().look()?;
        Some((read.subject, read.waited))
    }

    fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        for attachment in self.attachments.lock().unwrap().iter() {
            attachment.abort_connection();
        }
    }
}

/// One reader's transaction.
pub(crate) struct FirebirdReader {
    tr: Arc<Transaction>,
    context: Arc<ReadContext>,
}

impl FirebirdReader {
    /// The group its calls are watched in.
    pub(crate) fn read_group(&self) -> u64 {
        self.context.read_group
    }

    pub(crate) fn new(tr: Arc<Transaction>, context: Arc<ReadContext>) -> Self {
        FirebirdReader { tr, context }
    }
}

impl Reader for FirebirdReader {
    fn read(
        &mut self,
        unit: &Unit,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError> {
        // A unit's reads should each be quick; the run watches for one
        // that never returns (a server that stopped answering).
        fbunload_client::watch_reads_on_this_thread(self.context.read_group);
        let plan = self.context.plan.clone();
        let table = &plan.tables[unit.table];
        if table.changes_by_key.is_some() {
            return self.read_changes(unit, fetch_only, deliver);
        }
        let (rows, _) = self.read_sql(unit.table, &table.unit_sql(unit), fetch_only, deliver)?;
        Ok(rows)
    }
}

/// A range of a unit read for its changes whose changed rows are more
/// than this part of its rows is scanned for them, not fetched by key:
/// a fetch by key costs a row more than meeting it in a scan does, so a
/// range that changed all over is read as before.
const SCAN_WHEN_CHANGED_ABOVE: u64 = 8;

impl FirebirdReader {
    /// Runs `sql`, which reads rows of entry `entry`, and hands on its
    /// rows in batches: the rows, and whether to go on (`deliver` said
    /// stop).
    fn read_sql(
        &mut self,
        entry: usize,
        sql: &str,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(u64, bool), ExecError> {
        let table = &self.context.plan.tables[entry];
        let name = table.name.as_str();
        let client_error = |e| ExecError::from_client(name, e);
        let mut stmt = self
            .tr
            .prepare_for(&subject(table), sql)
            .map_err(client_error)?;
        let mut rows = 0u64;
        if fetch_only {
            stmt.execute().map_err(client_error)?;
            while stmt.fetch().map_err(client_error)? {
                rows += 1;
            }
            return Ok((rows, true));
        }
        let columns = output_columns(table, stmt.columns(), &self.context.types)?;
        // A count's one row in builders sized for 8,192 rows took 4 MiB
        // (64 BIGINT columns) a worker while it was read.
        let limits = match table.role.reads_one_row() {
            true => BatchLimits {
                rows: 1,
                ..self.context.batch
            },
            false => self.context.batch,
        };
        let mut decoder = RowDecoder::new(columns, limits);
        let schema = &self.context.schemas[entry];
        // The plan described most tables from the catalog (see
        // `catalog_described`): this is the server's word on them.
        if let Some(why) = unlike_planned(&decoder.schema(), schema) {
            return Err(ExecError::table(
                name,
                format!(
                    "the server describes its columns otherwise than the plan did ({why}): the \
                     table was altered while it was being read; run fbunload again"
                ),
            ));
        }
        // The table's one schema in every unit's batches, not a copy a
        // unit: a --since run keeps some of each unit's batches until it
        // ends (980 units of a 1,000,000-row STOCK at --unit-pages 50 held
        // 10.8 MB of copies, by heaptrack).
        decoder.share_schema(schema);
        stmt.execute().map_err(client_error)?;
        loop {
            let more = stmt.fetch().map_err(client_error)?;
            if more {
                decoder
                    .append_row(&stmt.row())
                    .map_err(|e| ExecError::from_decode(name, e))?;
                rows += 1;
            }
            if decoder.is_full() || (!more && !decoder.is_empty()) {
                let batch = decoder
                    .take_batch()
                    .map_err(|e| ExecError::from_decode(name, e))?;
                if !deliver(batch) {
                    return Ok((rows, false));
                }
            }
            if !more {
                return Ok((rows, true));
            }
        }
    }

    /// A unit of a table read for its changes by
    /// [`fbunload_plan::ChangesByKey`]: one scan of its pages counts each
    /// range's unchanged rows and lists its changed rows' DB_KEYs; the
    /// counts go on first, in an empty batch (see
    /// [`fbunload_plan::UNCHANGED_COUNTS_METADATA`]), then the changed
    /// rows, fetched by key range by range, in the order the scan met
    /// them.
    fn read_changes(
        &mut self,
        unit: &Unit,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError> {
        let plan = self.context.plan.clone();
        let table = &plan.tables[unit.table];
        let name = table.name.as_str();
        let internal = |what: &str| {
            ExecError::table(name, format!("its changes since the previous run: {what}"))
        };
        let by_key = table
            .changes_by_key
            .as_ref()
            .ok_or_else(|| internal("not planned"))?;
        let ranges = plan.tables[by_key.counts].count_buckets(unit);
        let sql = table
            .changes_scan_sql(&ranges)
            .ok_or_else(|| internal("not planned"))?;
        let texts = self.one_row_of_texts(table, &sql)?;
        if texts.len() != ranges.len() {
            return Err(internal("the scan returned another number of ranges"));
        }
        let mut counts = Vec::with_capacity(ranges.len());
        // What to read, in order: keys to fetch, or a range to scan.
        let mut reads: Vec<Result<Vec<&str>, Unit>> = Vec::new();
        for (text, &(first, end)) in texts.iter().zip(&ranges) {
            let mut words = text.split_ascii_whitespace();
            let unchanged: u64 = words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| internal("the scan's counts came back unreadable"))?;
            counts.push(unchanged.to_string());
            let keys: Vec<&str> = words.collect();
            if keys.is_empty() {
                continue;
            }
            let changed = keys.len() as u64;
            if changed * SCAN_WHEN_CHANGED_ABOVE > changed + unchanged {
                reads.push(Err(Unit {
                    first_slot: first,
                    end_slot: end,
                    ..*unit
                }));
                continue;
            }
            match reads.last_mut() {
                Some(Ok(pending)) => pending.extend(keys),
                _ => reads.push(Ok(keys)),
            }
        }
        if !fetch_only {
            let schema = &self.context.schemas[unit.table];
            let metadata = std::collections::HashMap::from([(
                fbunload_plan::UNCHANGED_COUNTS_METADATA.to_string(),
                counts.join(" "),
            )]);
            let schema = Schema::new_with_metadata(schema.fields().clone(), metadata);
            if !deliver(RecordBatch::new_empty(Arc::new(schema))) {
                return Ok(0);
            }
        }
        let mut rows = 0;
        for read in reads {
            let chunks: Vec<String> = match &read {
                Ok(keys) => keys
                    .chunks(fbunload_plan::KEYS_PER_FETCH)
                    .map(|keys| {
                        table
                            .rows_at_sql(keys)
                            .ok_or_else(|| internal("the scan's keys came back unreadable"))
                    })
                    .collect::<Result<_, _>>()?,
                Err(range) => vec![table.unit_sql(range)],
            };
            for sql in chunks {
                let (read, go_on) = self.read_sql(unit.table, &sql, fetch_only, deliver)?;
                rows += read;
                if !go_on {
                    return Ok(rows);
                }
            }
        }
        Ok(rows)
    }

    /// The one row `sql` returns, each column as text (a text BLOB read
    /// whole).
    fn one_row_of_texts(&self, table: &TablePlan, sql: &str) -> Result<Vec<String>, ExecError> {
        let name = table.name.as_str();
        let client_error = |e| ExecError::from_client(name, e);
        let mut stmt = self
            .tr
            .prepare_for(&subject(table), sql)
            .map_err(client_error)?;
        stmt.execute().map_err(client_error)?;
        let unreadable = || {
            ExecError::table(
                name,
                "its changes since the previous run: the scan's counts came back unreadable",
            )
        };
        if !stmt.fetch().map_err(client_error)? {
            return Err(unreadable());
        }
        let row = stmt.row();
        let mut blob = Vec::new();
        let mut texts = Vec::with_capacity(stmt.columns().len());
        for (i, desc) in stmt.columns().iter().enumerate() {
            let bytes = row.value(i).ok_or_else(unreadable)?;
            let text = if desc.sql_type == fbunload_client::sql_type::BLOB {
                let id: fbunload_client::BlobId = bytes.try_into().map_err(|_| unreadable())?;
                self.tr.read_blob(&id, &mut blob).map_err(client_error)?;
                std::mem::take(&mut blob)
            } else {
                bytes.to_vec()
            };
            texts.push(String::from_utf8(text).map_err(|_| unreadable())?);
        }
        Ok(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new database on the embedded engine holding `ddl`'s tables, made
    /// by SYSDBA, and `CLERK`'s attachment to it (no password: embedded).
    fn database_of(ddl: &[&str]) -> (tempfile::TempDir, Attachment, Attachment) {
        let client = Client::load(None).expect("libfbclient");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.fdb").to_string_lossy().into_owned();
        let db = Attachment::create_database(
            &client,
            &format!(
                "CREATE DATABASE '{path}' USER 'SYSDBA' PASSWORD 'masterkey' PAGE_SIZE 8192 \
                 DEFAULT CHARACTER SET UTF8"
            ),
        )
        .unwrap();
        for statement in ddl {
            let tr = db.start_transaction(TransactionMode::ReadWrite).unwrap();
            tr.execute(statement).unwrap();
            tr.commit().unwrap();
        }
        let attach = |user: &str| {
            let options = ConnectOptions {
                database: path.clone(),
                user: Some(user.into()),
                password: Some("masterkey".into()),
                charset: TRANSPORT_CHARSET.into(),
                ..Default::default()
            };
            Attachment::connect(&client, &options).unwrap()
        };
        (dir, attach("SYSDBA"), attach("CLERK"))
    }

    /// Every kind of column a table can hold, plain and NOT NULL (on the
    /// column or through its domain), in the character sets the plan reads
    /// as they are, as bytes, or converted by the server.
    const EVERY_COLUMN: &[&str] = &[
        "CREATE DOMAIN D_REQUIRED AS VARCHAR(10) NOT NULL",
        "CREATE DOMAIN D_CODE AS CHAR(4) CHARACTER SET WIN1252 NOT NULL",
        "CREATE DOMAIN D_MONEY AS NUMERIC(12,2)",
        "CREATE TABLE EVERY_COLUMN (\
         ID INTEGER NOT NULL PRIMARY KEY, S SMALLINT, I INTEGER NOT NULL, B BIGINT, \
         H INT128 NOT NULL, N4 NUMERIC(4,2), N9 NUMERIC(9,3) NOT NULL, D18 DECIMAL(18,4), \
         D38 DECIMAL(38,6), MONEY D_MONEY, MONEY_REQUIRED D_MONEY NOT NULL, \
         F FLOAT, DP DOUBLE PRECISION NOT NULL, \
         DT DATE, TM TIME NOT NULL, TS TIMESTAMP, TMZ TIME WITH TIME ZONE, \
         TSZ TIMESTAMP WITH TIME ZONE NOT NULL, BOOL BOOLEAN, \
         C_UTF CHAR(24), C_UTF_REQUIRED CHAR(24) NOT NULL, \
         C_CI CHAR(10) CHARACTER SET UTF8 COLLATE UNICODE_CI, \
         V_UTF VARCHAR(40) NOT NULL, V_CI VARCHAR(30) CHARACTER SET UTF8 COLLATE UNICODE_CI_AI, \
         C_WIN CHAR(5) CHARACTER SET WIN1252, V_WIN VARCHAR(5) CHARACTER SET WIN1252 NOT NULL, \
         C_DOS CHAR(7) CHARACTER SET DOS437, V_DOS VARCHAR(7) CHARACTER SET DOS437 NOT NULL, \
         C_DOS_LONG CHAR(9000) CHARACTER SET DOS437, \
         C_NONE CHAR(3) CHARACTER SET NONE NOT NULL, V_NONE VARCHAR(3) CHARACTER SET NONE, \
         C_OCT CHAR(8) CHARACTER SET OCTETS, V_OCT VARCHAR(8) CHARACTER SET OCTETS NOT NULL, \
         C_LONG CHAR(8191) CHARACTER SET UTF8, \
         REQUIRED D_REQUIRED, CODE D_CODE, \
         BL_TEXT BLOB SUB_TYPE TEXT, BL_TEXT_REQUIRED BLOB SUB_TYPE TEXT NOT NULL, \
         BL_WIN BLOB SUB_TYPE TEXT CHARACTER SET WIN1252, \
         BL_DOS BLOB SUB_TYPE TEXT CHARACTER SET DOS437, \
         BL_OCT BLOB SUB_TYPE TEXT CHARACTER SET OCTETS, \
         BL_BIN BLOB SUB_TYPE BINARY NOT NULL, BL_USER BLOB SUB_TYPE -3, \
         A_INT INTEGER [1:4], A_CHAR CHAR(3) [0:1, 1:2] CHARACTER SET WIN1252, \
         A_NUM NUMERIC(9,2) [3] NOT NULL, \
         TWICE COMPUTED BY (I * 2))",
        "CREATE TABLE NO_KEY (A VARCHAR(5), B CHAR(2) NOT NULL)",
        "CREATE TABLE WITH_DECFLOAT (ID INTEGER NOT NULL, DF DECFLOAT(16))",
    ];

    /// What the plan makes of each table of `plan`, and what the server
    /// describes for its read: (table, planned, described).
    fn planned_and_described(
        tr: &Transaction,
        catalog: &[fbunload_plan::Table],
        plan: &Plan,
        options: &PlanOptions,
    ) -> Vec<(String, SchemaRef, SchemaRef)> {
        let types = TypeOptions::default();
        plan.tables
            .iter()
            .enumerate()
            .filter_map(|(index, table)| {
                let described = catalog_described(table, catalog.get(index), options)?;
                let planned = schema_from(table, &described, &types).unwrap();
                let stmt = tr.prepare(&table.select_sql()).unwrap();
                let read = schema_from(table, stmt.columns(), &types).unwrap();
                Some((table.name.clone(), planned, read))
            })
            .collect()
    }

    #[test]
    fn the_catalog_describes_each_column_as_the_server_does() {
        let (_dir, db, _) = database_of(EVERY_COLUMN);
        let tr = db
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .unwrap();
        let catalog = read_catalog(&tr, &TableFilter::default()).unwrap();
        // Embedded (as read), then as through a server, whose reads trim
        // CHARs; then each reading its rows' DB_KEY too (--keep-keys).
        for trim_char_on_server in [false, true] {
            let options = PlanOptions {
                split_tables: true,
                page_size: 8192,
                trim_char_on_server,
                ..PlanOptions::default()
            };
            let plan = Plan::new(&catalog, options);
            let keys = catalog
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    (
                        i,
                        fbunload_plan::Table {
                            columns: t.columns[..1].to_vec(),
                            ..t.clone()
                        },
                    )
                })
                .collect();
            let keeping = Plan::new(&catalog, options).with_kept_keys(keys, &[], "", options);
            for plan in [plan, keeping] {
                let compared = planned_and_described(&tr, &catalog, &plan, &options);
                // WITH_DECFLOAT is prepared: its cast's character set is
                // the database's default.
                let tables: Vec<&str> = compared.iter().map(|c| c.0.as_str()).collect();
                assert_eq!(tables, ["EVERY_COLUMN", "NO_KEY"]);
                for (table, planned, read) in compared {
                    assert_eq!(unlike_planned(&read, &planned), None, "{table}");
                }
            }
        }
    }

    #[test]
    fn a_plan_prepares_no_table_s_read_its_user_may_read_without_grants() {
        let mut ddl: Vec<String> = (0..40)
            .map(|i| format!("CREATE TABLE T{i:02} (ID INTEGER NOT NULL, NAME VARCHAR(9))"))
            .collect();
        ddl.push("CREATE ROLE READER".into());
        let ddl: Vec<&str> = ddl.iter().map(String::as_str).collect();
        let (_dir, db, clerk) = database_of(&ddl);
        let plan = |attachment: &Attachment, filter: &TableFilter| {
            let tr = attachment
                .start_transaction(TransactionMode::ReadOnlySnapshot)
                .unwrap();
            let before = attachment.statements_prepared();
            let planned = plan_in(
                &tr,
                filter,
                PlanOptions::default(),
                true,
                &TypeOptions::default(),
            );
            (planned, attachment.statements_prepared() - before)
        };
        // The catalog's few queries, not one prepare a table.
        let (planned, prepared) = plan(&db, &TableFilter::default());
        assert_eq!(planned.unwrap().0.tables.len(), 40);
        assert!(
            prepared < 20,
            "{prepared} statements prepared for 40 tables"
        );
        // A --where is judged by the server now, before anything is read.
        let filter = TableFilter {
            include: Some("T01".into()),
            selection: vec![fbunload_plan::selection::parse_condition("T01:NOPE = 1").unwrap()],
            ..TableFilter::default()
        };
        let Err(refused) = plan(&db, &filter).0 else {
            panic!("NOPE = 1 planned");
        };
        assert!(refused.to_string().contains("NOPE"), "{refused}");
        // A user granted nothing is refused now too, not once the reads
        // begin: the tables it does not own are prepared.
        let Err(refused) = plan(&clerk, &TableFilter::default()).0 else {
            panic!("planned for a user granted nothing");
        };
        assert!(
            refused.to_string().contains("T00") && refused.to_string().contains("permission"),
            "{refused}"
        );
    }

    #[test]
    fn positions_in_a_condition_count_from_its_own_first_line() {
        let sql = "SELECT A FROM T WHERE (\nNOPE = 1\n) AND RDB$DB_KEY >= x";
        assert_eq!(condition_line(sql), 2);
        assert_eq!(
            lines_from("Column unknown; NOPE; At line 3, column 5", 2),
            "Column unknown; NOPE; At line 2, column 5"
        );
        assert_eq!(
            lines_from("Token unknown - line 2, column 13; <", 2),
            "Token unknown - line 1, column 13; <"
        );
        assert_eq!(lines_from("no position", 2), "no position");
    }

    #[test]
    fn a_condition_cut_short_is_not_shown_the_query_around_it() {
        // `--where 'S_QUANTITY <'`: Firebird meets fbunload's `)` on line 3.
        let message =
            "Dynamic SQL Error; SQL error code = -104; Token unknown - line 3, column 1; )";
        let said = in_condition(message, 2, 1);
        assert!(said.contains("ends before it is complete"), "{said}");
        assert!(!said.contains("; )") && !said.contains("line"), "{said}");
        // Inside the condition, positions count from its first line.
        assert_eq!(
            in_condition("Token unknown - line 2, column 13; <", 2, 1),
            "Token unknown - line 1, column 13; <"
        );
    }
}
