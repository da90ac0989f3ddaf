//! Keeping a target in sync: a run that kept its state in the target
//! (`--keep-keys`) is followed by runs that apply only what changed since
//! its snapshot, each in one PostgreSQL transaction.
//!
//! The state is what a file run's `--since` starts from: the run's
//! manifest and each table's keys file, kept as rows of
//! `<schema>._fbunload_state` (`state`: the manifest's SHA-256, `name`,
//! `bytes`), written in the transaction that publishes the rows they
//! describe, and named by that run's `_fbunload_runs` row (its options'
//! `state`). The facade reads it back ([`read_base`]) as a stranger's
//! directory, makes the change set at a new snapshot, and hands it here:
//! the upserts and tables read whole arrive as COPY into the staging
//! schema like a full load's rows, the deletes' keys by
//! [`PostgresDestination::copy_deletes`], then
//! [`PostgresDestination::apply_sync`] checks that the target is still
//! the base run's and applies the link.

use arrow_array::RecordBatch;
use fbunload_exec::ExecError;
use fbunload_plan::schema::{ConstraintKind, Schema};
use postgres::{Client, GenericClient, Transaction};
use std::sync::Arc;

use crate::{ident, pg_error, pg_name, PostgresDestination, ToLane, UnitCopy, RUNS_TABLE};

/// The table of fbunload's own that holds the state a sync starts from.
pub const STATE_TABLE: &str = "_fbunload_state";

/// A run's state as the target holds it: the files of a `--keep-keys`
/// (or `--since`) directory that the next run reads. Only their names are
/// held: the bytes (a keys file a table, thousands of them) are read one
/// piece at a time by [`PostgresDestination::each_base_file`] when the
/// run writes them out, so they are never in memory all at once.
#[derive(Debug, Clone)]
pub struct BaseState {
    /// The SHA-256 of its manifest, as `_fbunload_runs` names it.
    pub digest: String,
    pub files: Vec<String>,
    /// The PostgreSQL name of each sequence the run made, by its Firebird
    /// name (its `_fbunload_runs` row's `options.sequences`).
    pub sequences: crate::ddl::SequenceNames,
    /// Each keyed table's [`KeyChecksum`] as the run left it (its
    /// `_fbunload_runs` row's `options.checksums`; none from a run before
    /// they were kept).
    pub checksums: KeyChecksums,
}

/// `rows:sum`: a table's rows, and the sum of a 64-bit hash of each row's
/// key, as PostgreSQL computes them. Order does not count; a row deleted
/// and another added by hand change the sum though not the rows.
pub type KeyChecksum = String;
/// Each keyed table's [`KeyChecksum`], by its Firebird name.
pub type KeyChecksums = std::collections::BTreeMap<String, KeyChecksum>;

/// The state a run leaves for the next one: the files' names, each read
/// (and checked) by `read` only as it is written into the target, so the
/// state is never in memory all at once.
#[derive(Clone)]
pub struct NewState {
    pub digest: String,
    pub files: Vec<String>,
    /// One of `files`' bytes, or why they cannot be given (changed since
    /// the run listed them).
    pub read: ReadStateFile,
}

/// Reads one file of a [`NewState`] by name.
pub type ReadStateFile = Arc<dyn Fn(&str) -> Result<Vec<u8>, String> + Send + Sync>;

impl std::fmt::Debug for NewState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewState")
            .field("digest", &self.digest)
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// How many of the state's rows are fetched at a time: a few keys files,
/// not all of them.
const STATE_ROWS_AT_ONCE: i32 = 8;

/// How one table of a link is applied.
#[derive(Debug, Clone)]
pub enum Apply {
    /// Its keys' rows deleted, then its upserts inserted or updated by
    /// key (`key`: Firebird's column names of its primary key).
    Changes { key: Vec<String> },
    /// Its rows replaced whole (a table without a primary key, or one the
    /// file machinery read whole): with a key (`key` not empty), the rows
    /// whose key is gone are deleted and the others inserted or updated,
    /// so no foreign key's ON DELETE fires for a row that stays.
    Whole { key: Vec<String> },
}

/// One table of a link, with the rows it must hold before and after.
#[derive(Debug, Clone)]
pub struct TableLink {
    /// The Firebird name.
    pub name: String,
    pub apply: Apply,
    /// Rows the base run left in it.
    pub before: u64,
    /// Rows the new snapshot has.
    pub after: u64,
}

fn quoted(text: &str) -> String {
    crate::ddl::sql_literal(text)
}

/// The state of the run the target's schema holds, if its latest run
/// kept one. Read under the run's advisory lock; checked again in the
/// transaction that applies the link.
pub(crate) fn read_base(client: &mut Client, schema: &str) -> Result<Option<BaseState>, ExecError> {
    let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
    let state = format!("{}.{}", ident(schema), ident(STATE_TABLE));
    let fail = |e| pg_error("reading the target's state", e);
    let present: bool = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
            &[&runs, &state],
        )
        .map_err(fail)?
        .get(0);
    if !present {
        return Ok(None);
    }
    let latest = latest_state(client, schema)?;
    let Some(digest) = latest else {
        return Ok(None);
    };
    let rows = client
        .query(
            &format!("SELECT name FROM {state} WHERE state = $1 ORDER BY name"),
            &[&digest],
        )
        .map_err(fail)?;
    if rows.is_empty() {
        return Err(ExecError::Usage(format!(
            "schema {schema}: its latest run names state {digest}, which {STATE_TABLE} does not \
             hold (it was edited): reload it whole with --overwrite --keep-keys"
        )));
    }
    // Read back from the target: names used quoted, only in this schema.
    let recorded = client
        .query_one(
            &format!(
                "SELECT (options->'sequences')::text, (options->'checksums')::text FROM {runs} \
                 WHERE options->>'state' = $1 ORDER BY finished DESC, started DESC LIMIT 1"
            ),
            &[&digest],
        )
        .map_err(fail)?;
    type Map = std::collections::BTreeMap<String, String>;
    fn parse(text: Option<String>, schema: &str, what: &str) -> Result<Map, ExecError> {
        match text {
            None => Ok(Map::new()),
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                ExecError::Usage(format!(
                    "schema {schema}: its latest run's options.{what} cannot be read ({e}): it \
                     was edited; reload it whole with --overwrite --keep-keys"
                ))
            }),
        }
    }
    Ok(Some(BaseState {
        digest,
        files: rows.iter().map(|r| r.get(0)).collect(),
        sequences: parse(recorded.get(0), schema, "sequences")?,
        checksums: parse(recorded.get(1), schema, "checksums")?,
    }))
}

/// The state the latest `_fbunload_runs` row names, if any.
fn latest_state(
    client: &mut impl GenericClient,
    schema: &str,
) -> Result<Option<String>, ExecError> {
    let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
    let row = client
        .query_opt(
            &format!(
                "SELECT options->>'state' FROM {runs} ORDER BY finished DESC, started DESC \
                 LIMIT 1"
            ),
            &[],
        )
        .map_err(|e| pg_error("reading the target's runs", e))?;
    Ok(row.and_then(|r| r.get(0)))
}

/// The tables in an order where a table comes after those its foreign
/// keys reference (inserts in this order, deletes in the reverse); a
/// cycle keeps the given order for the tables in it.
fn referenced_first(names: &[String], schema: Option<&Schema>) -> Vec<usize> {
    let refs = |name: &str| -> Vec<usize> {
        let Some(table) = schema.and_then(|s| s.tables.iter().find(|t| t.name == name)) else {
            return Vec::new();
        };
        table
            .constraints
            .iter()
            .filter_map(|c| match &c.kind {
                ConstraintKind::ForeignKey { table: other, .. } if other != name => {
                    names.iter().position(|n| n == other)
                }
                _ => None,
            })
            .collect()
    };
    let mut order = Vec::new();
    let mut state = vec![0u8; names.len()]; // 0 new, 1 visiting, 2 done
    fn visit(
        i: usize,
        refs: &dyn Fn(&str) -> Vec<usize>,
        names: &[String],
        state: &mut [u8],
        order: &mut Vec<usize>,
    ) {
        if state[i] != 0 {
            return;
        }
        state[i] = 1;
        for j in refs(&names[i]) {
            visit(j, refs, names, state, order);
        }
        state[i] = 2;
        order.push(i);
    }
    for i in 0..names.len() {
        visit(i, &refs, names, &mut state, &mut order);
    }
    order
}

impl PostgresDestination {
    /// The state this run syncs from, where the target holds one (and
    /// neither `--overwrite` nor `--no-schema` was given).
    pub fn base_state(&self) -> Option<&BaseState> {
        self.base.as_ref()
    }

    /// Hands each file of the base state to `each`, in name order, as it
    /// is fetched: a few rows at a time through a portal, so only those
    /// are in memory. On a connection of its own, closed once read: a
    /// connection's read buffer keeps the size of the biggest row it held
    /// (the manifest, megabytes for thousands of tables), and the run's
    /// control connection lasts the whole run. The names were read under
    /// the run's advisory lock, which this session holds meanwhile, so no
    /// other run replaces the state; a file listed then and missing now
    /// is refused all the same.
    pub fn each_base_file<E: From<ExecError>>(
        &self,
        mut each: impl FnMut(String, Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let base = self
            .base
            .as_ref()
            .ok_or_else(|| ExecError::Internal("each_base_file without a base state".into()))?;
        let schema = &self.options.schema;
        let state = format!("{}.{}", ident(schema), ident(STATE_TABLE));
        let fail = |e| pg_error("reading the target's state", e);
        let mut client = self.target.connect().map_err(ExecError::Server)?;
        let mut tx = client.transaction().map_err(fail)?;
        let portal = tx
            .bind(
                &format!("SELECT name, bytes FROM {state} WHERE state = $1 ORDER BY name"),
                &[&base.digest],
            )
            .map_err(fail)?;
        let mut listed = base.files.iter();
        loop {
            let rows = tx.query_portal(&portal, STATE_ROWS_AT_ONCE).map_err(fail)?;
            if rows.is_empty() {
                break;
            }
            for row in rows {
                let name: String = row.get(0);
                if listed.next() != Some(&name) {
                    return Err(ExecError::Usage(format!(
                        "schema {schema}: its state changed while it was read ({}): another \
                         run wrote it meanwhile; run again",
                        name.escape_debug()
                    ))
                    .into());
                }
                each(name, row.get(1))?;
            }
        }
        if let Some(name) = listed.next() {
            return Err(ExecError::Usage(format!(
                "schema {schema}: its state changed while it was read ({} is gone): another \
                 run wrote it meanwhile; run again",
                name.escape_debug()
            ))
            .into());
        }
        tx.commit().map_err(fail)?;
        Ok(())
    }

    /// What the run records of its options in `_fbunload_runs`: as given,
    /// with `kind` (`full` or `sync`) and the `state` it leaves, if any.
    pub(crate) fn run_options_json(&self) -> serde_json::Value {
        let mut options = self.options.options_json.clone();
        if let serde_json::Value::Object(map) = &mut options {
            let kind = if self.base.is_some() { "sync" } else { "full" };
            map.insert("kind".into(), kind.into());
            if let Some(state) = self.state.lock().unwrap().as_ref() {
                map.insert("state".into(), state.digest.clone().into());
            }
            let sequences = self.sequence_names.lock().unwrap();
            if !sequences.is_empty() {
                map.insert("sequences".into(), serde_json::json!(*sequences));
            }
            let checksums = self.checksums.lock().unwrap();
            if !checksums.is_empty() {
                map.insert("checksums".into(), serde_json::json!(*checksums));
            }
        }
        options
    }

    /// Writes the state into `schema`'s state table, replacing any.
    pub(crate) fn write_state(
        &self,
        client: &mut impl GenericClient,
        schema: &str,
    ) -> Result<(), ExecError> {
        let state = self.state.lock().unwrap().clone();
        let Some(state) = state else {
            return Ok(());
        };
        let table = format!("{}.{}", ident(schema), ident(STATE_TABLE));
        let fail = |e| pg_error("writing the state", e);
        client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (state text NOT NULL, name text NOT NULL, \
                 bytes bytea NOT NULL, PRIMARY KEY (state, name)); DELETE FROM {table};"
            ))
            .map_err(fail)?;
        for name in &state.files {
            // One file in memory at a time, checked as it is read.
            let bytes = (state.read)(name)
                .map_err(|e| ExecError::Usage(format!("the state to keep in {schema}: {e}")))?;
            client
                .execute(
                    &format!("INSERT INTO {table} VALUES ($1, $2, $3)"),
                    &[&state.digest, name, &bytes],
                )
                .map_err(fail)?;
        }
        Ok(())
    }

    /// A full load that keeps its state (`--keep-keys`): published, with
    /// the state, once the files that describe it are known.
    pub fn publish_with_state(&self, state: NewState) -> Result<(), ExecError> {
        *self.state.lock().unwrap() = Some(state);
        let mut client = self.control.lock().unwrap();
        self.phase(|| {
            // The keys as loaded, for the next sync to find hand changes by.
            let mut tx = client
                .transaction()
                .map_err(|e| pg_error("publishing", e))?;
            *self.checksums.lock().unwrap() = self.key_checksums(&mut tx, &self.staging, None)?;
            tx.commit().map_err(|e| pg_error("publishing", e))?;
            self.publish(&mut client)?;
            if self.digesting() {
                self.verify_content(&mut client, &self.options.schema)?;
            }
            Ok(())
        })
    }

    /// Each keyed table's [`KeyChecksum`] in `schema` (of the tables
    /// named in `only`, or of all), computed in the caller's transaction.
    fn key_checksums(
        &self,
        tx: &mut Transaction<'_>,
        schema: &str,
        only: Option<&[TableLink]>,
    ) -> Result<KeyChecksums, ExecError> {
        let fail = |e| pg_error("computing the keys' checksums", e);
        // A key's text, hashed, must not depend on the session's settings.
        tx.batch_execute(
            "SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL TimeZone = 'UTC'; \
             SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex'",
        )
        .map_err(fail)?;
        let keyed: Vec<(String, Vec<String>)> = self
            .tables
            .lock()
            .unwrap()
            .iter()
            .filter(|t| !t.key.is_empty())
            .filter(|t| only.is_none_or(|links| links.iter().any(|l| l.name == t.name)))
            .map(|t| {
                let key = t.key.iter().map(|&i| ident(&pg_name(&t.columns[i].name)));
                (t.name.clone(), key.collect())
            })
            .collect();
        let mut sums = KeyChecksums::new();
        for (name, key) in keyed {
            let sum: String = tx
                .query_one(
                    &format!(
                        "SELECT count(*)::text || ':' || coalesce(sum(pg_catalog.hashtextextended(\
                         ROW({})::text, 0)::numeric), 0)::text FROM {}.{}",
                        key.join(", "),
                        ident(schema),
                        ident(&pg_name(&name))
                    ),
                    &[],
                )
                .map_err(fail)?
                .get(0);
            sums.insert(name, sum);
        }
        Ok(sums)
    }

    /// COPYs the keys of table `table`'s deleted rows into a staging table
    /// of their own, for [`Self::apply_sync`].
    pub fn copy_deletes(
        &self,
        table: &str,
        batches: &mut dyn Iterator<Item = Result<RecordBatch, String>>,
    ) -> Result<(), ExecError> {
        let (columns, staged) = {
            let tables = self.tables.lock().unwrap();
            let (i, load) = tables
                .iter()
                .enumerate()
                .find(|(_, t)| t.name == table)
                .ok_or_else(|| {
                    ExecError::Internal(format!("deletes of table {table}, not loaded"))
                })?;
            (load.columns.clone(), deletes_table(i))
        };
        let mut batches = batches.peekable();
        let Some(first) = batches.peek() else {
            return Ok(());
        };
        let schema = match first {
            Ok(b) => b.schema(),
            Err(e) => return Err(ExecError::Server(e.clone())),
        };
        let key: Vec<_> = schema
            .fields()
            .iter()
            .map(|f| {
                columns
                    .iter()
                    .find(|c| c.name == *f.name())
                    .cloned()
                    .ok_or_else(|| {
                        ExecError::Internal(format!(
                            "table {table}: key column {} not loaded",
                            f.name()
                        ))
                    })
            })
            .collect::<Result<_, _>>()?;
        let staging = format!("{}.{}", ident(&self.staging), ident(&staged));
        let defs: Vec<String> = key
            .iter()
            .map(|c| format!("{} {}", ident(&pg_name(&c.name)), c.sql_type))
            .collect();
        let names: Vec<String> = key.iter().map(|c| ident(&pg_name(&c.name))).collect();
        {
            let mut client = self.control.lock().unwrap();
            self.run_sql(
                &mut *client,
                "staging the deletes",
                &format!("CREATE TABLE {staging} ({})", defs.join(", ")),
            )?;
        }
        let lane = self.lane()?;
        let lost = || crate::lost(table);
        lane.to
            .send(ToLane::Begin(Arc::new(UnitCopy {
                sql: format!(
                    "COPY {staging} ({}) FROM STDIN (FORMAT binary)",
                    names.join(", ")
                ),
                table: table.to_string(),
                columns: Arc::new(key),
                key: Vec::new(),
                digest: false,
                journal: None,
            })))
            .map_err(|_| lost())?;
        for batch in batches {
            let batch = batch.map_err(ExecError::Server)?;
            if let Some(e) = lane.failed.lock().unwrap().clone() {
                return Err(ExecError::Server(e));
            }
            lane.to.send(ToLane::Batch(batch)).map_err(|_| lost())?;
        }
        lane.to.send(ToLane::End).map_err(|_| lost())?;
        lane.done
            .recv()
            .map_err(|_| lost())?
            .map_err(ExecError::Server)?;
        self.idle.lock().unwrap().push(lane);
        Ok(())
    }

    /// The one transaction of a sync: checks that the target is still the
    /// base run's (its latest run, each table's columns and rows), deletes
    /// the deleted keys, inserts or updates the upserts by key, replaces
    /// the tables read whole, sets the sequences, checks each table's rows
    /// against the new snapshot's, and records the run with its state.
    pub fn apply_sync(
        &self,
        links: &[TableLink],
        state: NewState,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), ExecError> {
        let base = self
            .base
            .clone()
            .ok_or_else(|| ExecError::Internal("apply_sync without a base state".into()))?;
        *self.state.lock().unwrap() = Some(state);
        self.idle.lock().unwrap().clear();
        fbunload_exec::pause_for_tests("FBUNLOAD_TEST_PAUSE_BEFORE_SYNC_MS");
        let schema = self.options.schema.clone();
        let mut client = self.control.lock().unwrap();
        let mut tx = client.transaction().map_err(|e| pg_error("syncing", e))?;
        self.check_base(&mut tx, &base, links)?;
        let model = self.schema.lock().unwrap().clone();
        let names: Vec<String> = links.iter().map(|l| l.name.clone()).collect();
        let order = referenced_first(&names, model.as_ref());
        let target = |name: &str| format!("{}.{}", ident(&schema), ident(&pg_name(name)));
        let staged = |name: &str| format!("{}.{}", ident(&self.staging), ident(&pg_name(name)));
        self.defer_foreign_keys(&mut tx, links)?;
        let tables = self.tables.lock().unwrap();
        let load_of = |name: &str| tables.iter().enumerate().find(|(_, t)| t.name == name);
        // Each table's key, and its deletes as SQL.
        let mut keys = Vec::new();
        let mut deletes = Vec::new();
        for link in links {
            let (index, _) = load_of(&link.name)
                .ok_or_else(|| ExecError::Internal(format!("table {} not loaded", link.name)))?;
            let key = match &link.apply {
                Apply::Changes { key } => key.clone(),
                Apply::Whole { key } if key.is_empty() => unique_key(&link.name, model.as_ref()),
                Apply::Whole { key } => key.clone(),
            };
            let on = |a: &str, b: &str| -> String {
                key.iter()
                    .map(|k| format!("{a}.{c} = {b}.{c}", c = ident(&pg_name(k))))
                    .collect::<Vec<_>>()
                    .join(" AND ")
            };
            let sql = match &link.apply {
                Apply::Whole { .. } if key.is_empty() => {
                    Some(format!("DELETE FROM {};", target(&link.name)))
                }
                Apply::Whole { .. } => Some(format!(
                    "DELETE FROM {} t WHERE NOT EXISTS (SELECT 1 FROM {} s WHERE {});",
                    target(&link.name),
                    staged(&link.name),
                    on("s", "t")
                )),
                Apply::Changes { .. } => {
                    let staged_deletes =
                        format!("{}.{}", ident(&self.staging), ident(&deletes_table(index)));
                    let exists: bool = tx
                        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&staged_deletes])
                        .map_err(|e| pg_error("syncing", e))?
                        .get(0);
                    exists.then(|| {
                        format!(
                            "DELETE FROM {} t USING {staged_deletes} d WHERE {};",
                            target(&link.name),
                            on("t", "d")
                        )
                    })
                }
            };
            keys.push(key);
            deletes.push(sql);
        }
        // Foreign keys are checked at the commit (deferred above), so
        // rows may arrive in any order; but their ON DELETE actions fire
        // at once. So each table in turn, those that reference others
        // first: its deleted rows, then its upserts. When a parent's
        // rows are deleted its children are already as Firebird has
        // them (gone, or moved to a parent's new key: ON UPDATE
        // CASCADE), so an ON DELETE CASCADE takes nothing that stays;
        // and a UNIQUE value a deleted row held is free for a new row.
        let mut sql = String::new();
        for &i in order.iter().rev() {
            let link = &links[i];
            if let Some(delete) = &deletes[i] {
                sql += delete;
            }
            let (_, load) = load_of(&link.name).expect("found above");
            let columns: Vec<String> = load
                .columns
                .iter()
                .map(|c| ident(&pg_name(&c.name)))
                .collect();
            let list = columns.join(", ");
            // GENERATED ALWAYS identity columns take Firebird's values.
            sql += &format!(
                "INSERT INTO {} ({list}) OVERRIDING SYSTEM VALUE SELECT {list} FROM {}",
                target(&link.name),
                staged(&link.name)
            );
            let key = &keys[i];
            if !key.is_empty() {
                let always = always_identity(&mut tx, &target(&link.name))?;
                let key_names: Vec<String> = key.iter().map(|k| ident(&pg_name(k))).collect();
                let set: Vec<String> = columns
                    .iter()
                    .filter(|c| !key_names.contains(c) && !always.contains(c))
                    .map(|c| format!("{c} = EXCLUDED.{c}"))
                    .collect();
                sql += &format!(" ON CONFLICT ({}) DO ", key_names.join(", "));
                sql += &if set.is_empty() {
                    "NOTHING".to_string()
                } else {
                    format!("UPDATE SET {}", set.join(", "))
                };
            }
            sql += ";";
        }
        drop(tables);
        let pg_tables: Vec<String> = links.iter().map(|l| pg_name(&l.name)).collect();
        let (hold, release) = crate::translate::hold_triggers(&mut tx, &schema, &pg_tables)
            .map_err(|e| pg_error("holding the tables' triggers", e))?;
        tx.batch_execute(&format!("{hold}{sql}{release}"))
            .map_err(|e| pg_error("applying the changes", e))?;
        self.create_new(&mut tx, links, model.as_ref())?;
        self.check_rows(&mut tx, links, |l| l.after, "after the link was applied")?;
        self.set_sequences(&mut tx, links)?;
        let checksums = self.key_checksums(&mut tx, &schema, None)?;
        *self.checksums.lock().unwrap() = checksums;
        self.record(&mut tx, &schema)?;
        self.write_state(&mut tx, &schema)?;
        tx.batch_execute(&format!("DROP SCHEMA {} CASCADE", ident(&self.staging)))
            .map_err(|e| pg_error("syncing", e))?;
        // Stopped (Ctrl-C, SIGTERM) before the commit: rolled back.
        if stopped() {
            return Err(ExecError::Interrupted);
        }
        // The deferred foreign keys are checked here.
        tx.commit()
            .map_err(|e| pg_error("applying the changes (at the commit)", e))?;
        self.published
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// The foreign keys of the link's tables made deferrable (targets
    /// loaded before they were made so), and deferred to the commit of
    /// the sync's transaction.
    fn defer_foreign_keys(
        &self,
        tx: &mut Transaction<'_>,
        links: &[TableLink],
    ) -> Result<(), ExecError> {
        let schema = &self.options.schema;
        let tables: Vec<String> = links.iter().map(|l| pg_name(&l.name)).collect();
        let rows = tx
            .query(
                "SELECT c.relname::text, k.conname::text FROM pg_catalog.pg_constraint k \
                 JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_namespace n \
                 ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = ANY($2) \
                 AND k.contype = 'f' AND NOT k.condeferrable",
                &[schema, &tables],
            )
            .map_err(|e| pg_error("syncing", e))?;
        let mut sql = String::new();
        for row in rows {
            let (table, constraint): (String, String) = (row.get(0), row.get(1));
            sql += &format!(
                "ALTER TABLE {}.{} ALTER CONSTRAINT {} DEFERRABLE INITIALLY IMMEDIATE;",
                ident(schema),
                ident(&table),
                ident(&constraint)
            );
        }
        sql += "SET CONSTRAINTS ALL DEFERRED";
        tx.batch_execute(&sql)
            .map_err(|e| pg_error("deferring the foreign keys", e))
    }

    /// What Firebird has that the target lacks since the base run: a new
    /// sequence is created (set with the others), a new unique index or
    /// key on the link's tables built (the rows, at Firebird's snapshot,
    /// satisfy it). Each takes a name no relation of the target has.
    fn create_new(
        &self,
        tx: &mut Transaction<'_>,
        links: &[TableLink],
        model: Option<&Schema>,
    ) -> Result<(), ExecError> {
        let Some(model) = model else {
            return Ok(());
        };
        let schema = &self.options.schema;
        let fail = |e| pg_error("creating what is new in Firebird", e);
        let existing: Vec<String> = tx
            .query(
                "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace \
                 n ON n.oid = c.relnamespace WHERE n.nspname = $1",
                &[schema],
            )
            .map_err(fail)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut names = crate::ddl::Names::taken(existing);
        let mut sql = String::new();
        {
            let mut sequences = self.sequence_names.lock().unwrap();
            for sequence in &model.sequences {
                if sequences.contains_key(&sequence.name) {
                    continue;
                }
                let pg = names.take(&pg_name(&sequence.name));
                sql += &format!(
                    "CREATE SEQUENCE {}.{} AS bigint {};",
                    ident(schema),
                    ident(&pg),
                    crate::ddl::sequence_clauses(sequence.values)
                );
                sequences.insert(sequence.name.clone(), pg);
            }
        }
        for table in model
            .tables
            .iter()
            .filter(|t| links.iter().any(|l| l.name == t.name))
        {
            let target = format!("{}.{}", ident(schema), ident(&pg_name(&table.name)));
            let unique: Vec<Vec<String>> = tx
                .query(
                    "SELECT array_agg(a.attname::text ORDER BY a.attname) FROM \
                     pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = \
                     i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass($1) \
                     AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL GROUP BY \
                     i.indexrelid",
                    &[&target],
                )
                .map_err(fail)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            for (name, columns) in unique_keys(table) {
                let mut set: Vec<String> = columns.iter().map(|c| pg_name(c)).collect();
                set.sort();
                if unique.contains(&set) {
                    continue;
                }
                let name =
                    names.take(&pg_name(&name.unwrap_or_else(|| {
                        format!("{}_{}_key", table.name, columns.join("_"))
                    })));
                let list: Vec<String> = columns.iter().map(|c| ident(&pg_name(c))).collect();
                sql += &format!(
                    "CREATE UNIQUE INDEX {} ON {target} ({});",
                    ident(&name),
                    list.join(", ")
                );
            }
        }
        tx.batch_execute(&sql).map_err(fail)
    }

    /// In the sync's transaction: the target is still the base run's.
    fn check_base(
        &self,
        tx: &mut Transaction<'_>,
        base: &BaseState,
        links: &[TableLink],
    ) -> Result<(), ExecError> {
        let schema = &self.options.schema;
        // Readers may go on; writers to the runs wait for this one.
        tx.batch_execute(&format!(
            "LOCK TABLE {}.{} IN SHARE ROW EXCLUSIVE MODE",
            ident(schema),
            ident(RUNS_TABLE)
        ))
        .map_err(|e| pg_error("syncing", e))?;
        let latest = latest_state(tx, schema)?;
        if latest.as_deref() != Some(base.digest.as_str()) {
            return Err(ExecError::Usage(format!(
                "schema {schema} of {}: its latest run is no longer the one this sync started \
                 from (state {}): another run applied a link meanwhile; nothing was changed, \
                 run again",
                self.target.shown(),
                base.digest
            )));
        }
        for link in links {
            // A computed column is the load's GENERATED one, not loaded.
            let mut columns = |relation: String| -> Result<Option<String>, ExecError> {
                Ok(tx
                    .query_one(
                        // A domain counts as its base type: the load
                        // types a domain's columns with it, staging does not.
                        "SELECT pg_catalog.string_agg(a.attname || ' ' || pg_catalog.format_type( \
                         CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, \
                         CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END), \
                         ', ' ORDER BY a.attname) FROM pg_catalog.pg_attribute a \
                         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid WHERE \
                         a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 \
                         AND NOT a.attisdropped AND a.attgenerated = ''",
                        &[&relation],
                    )
                    .map_err(|e| pg_error("syncing", e))?
                    .get(0))
            };
            let pg = pg_name(&link.name);
            let ours = columns(format!("{}.{}", ident(&self.staging), ident(&pg)))?;
            let theirs = columns(format!("{}.{}", ident(schema), ident(&pg)))?;
            let Some(theirs) = theirs else {
                return Err(ExecError::Usage(format!(
                    "table {}: {schema}.{pg} is gone from the target (dropped by hand?); \
                     nothing was changed: reload with --overwrite --keep-keys (which discards \
                     every write made in PostgreSQL since the load)",
                    link.name
                )));
            };
            if ours.as_deref() != Some(theirs.as_str()) {
                return Err(ExecError::Usage(format!(
                    "table {}: the columns of {schema}.{pg} are not the ones fbunload loaded \
                     ({theirs}; expected {}): edited by hand? nothing was changed: reload with \
                     --overwrite --keep-keys (which discards every write made in PostgreSQL \
                     since the load)",
                    link.name,
                    ours.unwrap_or_default()
                )));
            }
        }
        self.check_rows(tx, links, |l| l.before, "before the link")?;
        // As many rows, but the same ones? (A row deleted and another
        // added by hand keep the count.)
        let now = self.key_checksums(tx, schema, Some(links))?;
        for (table, sum) in &now {
            let Some(kept) = base.checksums.get(table) else {
                continue;
            };
            if kept != sum {
                return Err(ExecError::Usage(format!(
                    "table {table}: the keys of {schema}.{} are not the ones the chain left \
                     (as many rows, other keys): rows were deleted and added by hand; nothing \
                     was changed: reload with --overwrite --keep-keys",
                    pg_name(table)
                )));
            }
        }
        Ok(())
    }

    /// Each table holds the rows it should (`expected`), or the sync
    /// stops (its transaction rolled back).
    fn check_rows(
        &self,
        tx: &mut Transaction<'_>,
        links: &[TableLink],
        expected: impl Fn(&TableLink) -> u64,
        when: &str,
    ) -> Result<(), ExecError> {
        let schema = &self.options.schema;
        for link in links {
            let pg = pg_name(&link.name);
            let n: i64 = tx
                .query_one(
                    &format!("SELECT count(*) FROM {}.{}", ident(schema), ident(&pg)),
                    &[],
                )
                .map_err(|e| pg_error("syncing", e))?
                .get(0);
            if n as u64 != expected(link) {
                return Err(ExecError::Usage(format!(
                    "table {}: {schema}.{pg} holds {n} rows {when}, where the chain says {}: \
                     its rows were changed by hand (or by a foreign key's cascade); nothing \
                     was changed: reload with --overwrite --keep-keys (which discards every \
                     write made in PostgreSQL since the load; after the cut-over, \
                     --pg-end-sync ends the syncs instead)",
                    link.name,
                    expected(link)
                )));
            }
        }
        Ok(())
    }

    /// Sequences and identity columns at Firebird's values.
    fn set_sequences(
        &self,
        tx: &mut Transaction<'_>,
        links: &[TableLink],
    ) -> Result<(), ExecError> {
        let model = self.schema.lock().unwrap().clone();
        let Some(model) = model else {
            return Ok(());
        };
        let schema = &self.options.schema;
        let mut sql = String::new();
        let names = self.sequence_names.lock().unwrap().clone();
        for sequence in &model.sequences {
            // As the load named it (a suffix where a table had its name).
            let pg = names
                .get(&sequence.name)
                .cloned()
                .unwrap_or_else(|| pg_name(&sequence.name));
            let name = format!("{}.{}", ident(schema), ident(&pg));
            // setval(NULL) would do nothing, without a word.
            let present: bool = tx
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])
                .map_err(|e| pg_error("setting the sequences", e))?
                .get(0);
            if !present {
                return Err(ExecError::Usage(format!(
                    "sequence {}: {schema}.{pg} is gone from the target (dropped by hand?); \
                     nothing was changed: reload with --overwrite --keep-keys",
                    sequence.name
                )));
            }
            sql += &format!(
                "SELECT pg_catalog.setval(pg_catalog.to_regclass({}), {}, true);",
                quoted(&name),
                sequence.values.current
            );
        }
        for table in model
            .tables
            .iter()
            .filter(|t| links.iter().any(|l| l.name == t.name))
        {
            let name = format!("{}.{}", ident(schema), ident(&pg_name(&table.name)));
            for column in &table.columns {
                if let Some(identity) = column.identity {
                    sql += &format!(
                        "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence({}, {}), {}, true);",
                        quoted(&name),
                        quoted(&pg_name(&column.name)),
                        identity.sequence.current
                    );
                }
            }
        }
        tx.batch_execute(&sql)
            .map_err(|e| pg_error("setting the sequences", e))
    }
}

/// The unique keys of a table in Firebird (its primary key, UNIQUE
/// constraints, unique indices over columns), with their names.
fn unique_keys(table: &fbunload_plan::schema::TableSchema) -> Vec<(Option<String>, Vec<String>)> {
    let constraints = table.constraints.iter().filter_map(|c| match c.kind {
        ConstraintKind::PrimaryKey | ConstraintKind::Unique => {
            Some((c.name.clone(), c.columns.clone()))
        }
        ConstraintKind::ForeignKey { .. } => None,
    });
    let indices = table
        .indices
        .iter()
        .filter(|i| {
            i.unique
                && !i.inactive
                && i.expression.is_none()
                && i.condition.is_none()
                && !i.columns.is_empty()
        })
        .map(|i| (Some(i.name.clone()), i.columns.clone()));
    constraints.chain(indices).collect()
}

/// The key a table without a primary key is applied by: a unique key
/// whose columns are all NOT NULL (no two rows alike), or none.
fn unique_key(name: &str, schema: Option<&Schema>) -> Vec<String> {
    let Some(table) = schema.and_then(|s| s.tables.iter().find(|t| t.name == name)) else {
        return Vec::new();
    };
    let not_null = |c: &String| table.columns.iter().any(|k| &k.name == c && k.not_null);
    unique_keys(table)
        .into_iter()
        .map(|(_, columns)| columns)
        .find(|columns| columns.iter().all(not_null))
        .unwrap_or_default()
}

/// The GENERATED ALWAYS identity columns of `table` (quoted), which an
/// upsert may not set.
fn always_identity(tx: &mut Transaction<'_>, table: &str) -> Result<Vec<String>, ExecError> {
    Ok(tx
        .query(
            "SELECT attname::text FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass($1) \
             AND attidentity = 'a'",
            &[&table],
        )
        .map_err(|e| pg_error("syncing", e))?
        .iter()
        .map(|r| ident(&r.get::<_, String>(0)))
        .collect())
}

/// The staging table of the deletes of the plan's table `index`: a name
/// no Firebird table maps to (those are lower case, or as quoted).
fn deletes_table(index: usize) -> String {
    format!("_FBUNLOAD_deletes_{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use fbunload_plan::schema::{Constraint, TableSchema};

    fn referencing(name: &str, others: &[&str]) -> TableSchema {
        TableSchema {
            name: name.into(),
            constraints: others
                .iter()
                .map(|o| Constraint {
                    name: None,
                    kind: ConstraintKind::ForeignKey {
                        table: o.to_string(),
                        columns: vec!["ID".into()],
                        on_update: None,
                        on_delete: None,
                    },
                    columns: vec!["R".into()],
                    index: None,
                })
                .collect(),
            ..TableSchema::default()
        }
    }

    #[test]
    fn referenced_tables_come_first_and_cycles_keep_their_order() {
        let names: Vec<String> = ["LINE", "ORDERS", "CUSTOMER", "A", "B"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(referenced_first(&names, None), vec![0, 1, 2, 3, 4]);
        let schema = Schema {
            tables: vec![
                referencing("LINE", &["ORDERS", "LINE"]),
                referencing("ORDERS", &["CUSTOMER", "NOT_LOADED"]),
                referencing("CUSTOMER", &[]),
                referencing("A", &["B"]),
                referencing("B", &["A"]),
            ],
            ..Schema::default()
        };
        // CUSTOMER before ORDERS before LINE; the cycle A <-> B ends.
        assert_eq!(referenced_first(&names, Some(&schema)), vec![2, 1, 0, 4, 3]);
    }
}
