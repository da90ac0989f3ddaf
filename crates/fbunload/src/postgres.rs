//! Loading into PostgreSQL: [`Unload::to_postgres`], the options the
//! command line and Python spell from here, and what a load returns.

use fbunload_dest_postgres::{PostgresDestination, PostgresOptions, Say, Target};
use serde_json::json;

use crate::output::OutputOptions;
use crate::{Error, Progress, Reuse, Summary, Unload};

pub use fbunload_dest_postgres::{
    is_postgres_uri, pg_name, Tally, Untranslated, DEFAULT_SCHEMA, REPORT_TABLE, RUNS_TABLE,
};

/// What `--pg-schema` and Python's `pg_schema` say in help.
pub const PG_SCHEMA_HELP: &str = "The PostgreSQL schema to load into when -o is a \
    postgresql:// URI [default: public]. It is replaced whole, in one transaction, once the new \
    tables are complete; one that holds anything is refused unless --overwrite (which never \
    drops what fbunload did not make without --pg-drop-others), or, where an earlier run kept \
    its state there (--keep-keys), synced: only what changed since is applied";

/// What `--pg-lock-wait` and Python's `pg_lock_wait` say in help.
pub const PG_LOCK_WAIT_HELP: &str = "How long, in seconds, a PostgreSQL load waits in all for \
    other sessions that hold locks on the target's tables before it puts its tables in place \
    [default: 300]. It tries every few seconds, giving way in between, and names the sessions \
    it waits for (pid, application, user, state); past it, the run fails and changes nothing";

/// What `--pg-drop-others` and Python's `pg_drop_others` say in help.
pub const PG_DROP_OTHERS_HELP: &str = "With --overwrite into PostgreSQL: also drop what \
    fbunload did not make, which is otherwise refused: objects in the target schema that no \
    fbunload run created (your tables, views, functions, types, extensions), and objects in \
    other schemas that depend on it (a view over a loaded table, a foreign key to it); each \
    is printed as it is dropped";

/// What `--pg-grants` and Python's `pg_grants` say in help.
pub const PG_GRANTS_HELP: &str = "With -o postgresql://: also make Firebird's roles and users as \
    PostgreSQL roles without LOGIN (where the cluster has none of that name) and grant them, \
    and PUBLIC, the privileges Firebird grants on the loaded tables and their columns. Off by \
    default: roles belong to the whole PostgreSQL cluster. Every grant is reported either way: \
    made, or listed in _fbunload_untranslated with why";

/// What `--pg-fillfactor` and Python's `pg_fillfactor` say in help.
pub const PG_FILLFACTOR_HELP: &str = "The fillfactor (10-100) of the tables a load into \
    PostgreSQL makes: the percent of each heap page the load fills, leaving the rest for later \
    versions of its rows, so an UPDATE that changes no indexed column stays on its page \
    (PostgreSQL's HOT update: no index entry, no new page). [default: 90 with --keep-keys, \
    whose target every sync and follow updates; else PostgreSQL's 100]. Set only on the \
    tables fbunload makes; a sync leaves the target's tables as their load made them";

/// The fillfactor of a `--keep-keys` load's tables unless told: room on
/// each page for HOT updates. Measured (docs/PERFORMANCE.md, "Live"):
/// 1% of 2M STOCK rows updated by a follow, the UPDATE's buffers halved
/// and its time up to 2.8x less than at 100, for a table 13% larger.
pub const KEPT_FILLFACTOR: u8 = 90;

/// What `--pg-verify-only` and Python's `pg_verify_only` say in help.
pub const PG_VERIFY_ONLY_HELP: &str = "With -o postgresql://: load nothing; read the tables from \
    Firebird at a new snapshot and compare them with what --pg-schema holds, as --verify does \
    after a load: every column's values, range by range in key order; any difference is named \
    (table, first and last key of the range, the columns) and the status is 1. For the \
    cut-over day, once writes to Firebird have stopped";

/// What `--pg-end-sync` says in help.
pub const PG_END_SYNC_HELP: &str = "With -o postgresql://: the cut-over. Ends keeping \
    --pg-schema in sync: removes fbunload's own tables there (_fbunload_state, _fbunload_runs, \
    _fbunload_untranslated), in one transaction, reading nothing from Firebird (-d is not \
    needed). Run it once the application writes to PostgreSQL: a later fbunload run into the \
    schema is then refused instead of applied over the application's writes \
    (docs/postgresql.md, Moving an application)";

pub use fbunload_dest_postgres::cut_over::EndedSync;
pub use fbunload_dest_postgres::plan_target::TargetPlan;

/// The cut-over: ends keeping `schema` (default `public`) of the
/// PostgreSQL database at `uri` in sync (see [`PG_END_SYNC_HELP`]).
pub fn end_sync(uri: &str, schema: Option<&str>) -> Result<EndedSync, Error> {
    let target = Target::parse(uri).map_err(Error::Usage)?;
    let schema = schema.unwrap_or(DEFAULT_SCHEMA);
    fbunload_dest_postgres::cut_over::end_sync(&target, schema)
}

/// The target of `uri` as messages name it (no password).
pub fn shown_target(uri: &str) -> String {
    Target::parse(uri)
        .map(|t| t.shown().to_string())
        .unwrap_or_default()
}

/// What a load into PostgreSQL did.
#[derive(Debug)]
pub struct Loaded {
    pub summary: Summary,
    /// The target, without its password.
    pub target: String,
    pub schema: String,
    /// Every object of the Firebird catalog not made in PostgreSQL
    /// (views, triggers, procedures, CHECKs, exceptions, grants, ...),
    /// with its Firebird source and why; also in the target's
    /// `_fbunload_untranslated`.
    pub untranslated: Vec<Untranslated>,
    /// Every object of the Firebird catalog, counted by kind: how many
    /// were made in PostgreSQL and how many reported (empty for a sync,
    /// which keeps its load's objects).
    pub catalog: Vec<Tally>,
    /// Whether the run synced a target that kept its state (only the
    /// changes applied) rather than loading it whole.
    pub synced: bool,
    /// What a `--resume` kept of the stopped load and read again.
    pub resumed: Option<crate::pgresume::Resumed>,
}

impl Loaded {
    /// What a load into `destination` did: the run's `summary` and what
    /// the destination tallied of the catalog.
    fn of(destination: &PostgresDestination, schema: String, summary: Summary) -> Loaded {
        Loaded {
            summary,
            target: destination.target().shown().to_string(),
            schema,
            untranslated: destination.untranslated(),
            catalog: destination.catalog_tallies(),
            synced: false,
            resumed: None,
        }
    }
}

/// The file-format option given, if any: PostgreSQL takes the rows as
/// they are, so each is refused in one line.
pub fn refuse_file_options(options: &OutputOptions) -> Result<(), String> {
    let given = match options.first_given() {
        Some(flag) => Some(format!("--{flag}")),
        None if options.format != crate::FormatName::Csv => Some("--format".into()),
        None => None,
    };
    match given {
        Some(flag) => Err(format!(
            "{flag} is for files; a postgresql:// output takes the rows with binary COPY, \
             typed as docs/postgresql.md says"
        )),
        None => Ok(()),
    }
}

impl Unload {
    /// How long a load into PostgreSQL waits, in all, for other sessions'
    /// locks on the target's tables before it publishes
    /// ([`PG_LOCK_WAIT_HELP`]).
    pub fn pg_lock_wait(mut self, wait: std::time::Duration) -> Self {
        self.pg_lock_wait = wait;
        self
    }

    /// The fillfactor, 10 to 100, of the tables a load into PostgreSQL
    /// makes ([`PG_FILLFACTOR_HELP`]).
    pub fn pg_fillfactor(mut self, percent: u8) -> Self {
        self.pg_fillfactor = Some(percent);
        self
    }

    /// The fillfactor the tables a load makes get: as given, else
    /// [`KEPT_FILLFACTOR`] for a target kept in sync.
    fn fillfactor(&self) -> Option<u8> {
        self.pg_fillfactor
            .or(self.keep_keys.then_some(KEPT_FILLFACTOR))
    }

    /// Whether [`Unload::overwrite`] into PostgreSQL may drop what fbunload
    /// did not make ([`PG_DROP_OTHERS_HELP`]).
    pub fn pg_drop_others(mut self, drop: bool) -> Self {
        self.pg_drop_others = drop;
        self
    }

    /// Loads every selected table into schema `schema` (default `public`)
    /// of the PostgreSQL database at `uri` (`postgresql://USER@HOST:PORT/
    /// DBNAME`; the password in it, or `PGPASSWORD`, or `~/.pgpass`): each
    /// worker over a connection of its own with binary COPY, at the run's
    /// one snapshot, into a staging schema; then keys, indices, foreign
    /// keys, NOT NULL, defaults and sequences; then one transaction puts
    /// it in place of `schema`. A run that fails leaves the target as it
    /// was. [`Unload::overwrite`] replaces a schema holding tables; with
    /// [`RunOptions::schema`](crate::RunOptions) false (`--no-schema`) the
    /// tables must exist and their rows are replaced.
    pub fn to_postgres(
        &self,
        uri: &str,
        schema: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<Loaded, Error> {
        // Refused as before, ahead of the URI: a bad table name first.
        self.table_filter()?;
        if self.since.is_some() {
            return Err(Error::Usage(
                "--since reads a directory's run; a postgresql:// output syncs from the state \
                 its target holds (load it once with --keep-keys; docs/postgresql.md)"
                    .into(),
            ));
        }
        if self.keep_keys && !self.options.schema {
            return Err(Error::Usage(
                "--keep-keys with --no-schema: a target kept in sync is one fbunload created; \
                 leave out --no-schema"
                    .into(),
            ));
        }
        if self.part_limits.splits() {
            return Err(Error::Usage(
                "--max-rows and --max-bytes cut files; a postgresql:// output has none".into(),
            ));
        }
        if let Some(percent) = self.pg_fillfactor {
            if !(10..=100).contains(&percent) {
                return Err(Error::Usage(format!(
                    "--pg-fillfactor {percent}: PostgreSQL takes 10 to 100 (percent of a page)"
                )));
            }
            if !self.options.schema {
                return Err(Error::Usage(
                    "--pg-fillfactor sets the tables fbunload makes; with --no-schema it makes \
                     none: leave out --pg-fillfactor (or ALTER TABLE ... SET (fillfactor = N) \
                     on your tables)"
                        .into(),
                ));
            }
        }
        if self.pg_drop_others && self.reuse != Reuse::Overwrite {
            return Err(Error::Usage(
                "--pg-drop-others is for --overwrite: add it, or leave --pg-drop-others out".into(),
            ));
        }
        if self.resumable || self.resume {
            if self.keep_keys || !self.options.schema {
                return Err(Error::Usage(format!(
                    "--resumable and --resume keep one snapshot across a stop; {} cannot be \
                     combined with them into PostgreSQL",
                    if self.keep_keys {
                        "--keep-keys"
                    } else {
                        "--no-schema"
                    }
                )));
            }
            self.refuse_with_resumable(false)?;
        }
        if let Some(archive) = &self.journal {
            if !self.keep_keys {
                return Err(Error::Usage(
                    "--journal hands a --keep-keys load over to `fbunload follow`: add --keep-keys"
                        .into(),
                ));
            }
            self.check_journal(archive)?;
        }
        let target = Target::parse(uri).map_err(Error::Usage)?;
        // The destination's notes (a wait on locks, what it drops) go to
        // the run's progress as warnings, from whichever thread says them.
        let (notes, said) = std::sync::mpsc::channel::<String>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for note in said {
                    progress.warning(&note);
                }
            });
            let say = Say(std::sync::Arc::new(move |line: &str| {
                let _ = notes.send(line.to_string());
            }));
            self.load_postgres(target, schema, say, progress)
        })
    }

    fn load_postgres(
        &self,
        target: Target,
        schema: Option<&str>,
        say: Say,
        progress: &dyn Progress,
    ) -> Result<Loaded, Error> {
        let filter = self.table_filter()?;
        let schema = schema.unwrap_or(DEFAULT_SCHEMA).to_string();
        let options = PostgresOptions {
            schema: schema.clone(),
            overwrite: self.reuse == Reuse::Overwrite,
            create_tables: self.options.schema,
            verify: self.options.verify,
            verify_only: false,
            source: self.connect.database.clone(),
            options_json: json!({
                "tables": filter.include,
                "exclude": filter.exclude,
                "views": filter.views,
                "queries": filter.queries.iter().map(|q| json!({"name": q.name, "sql": q.sql, "split_by": q.split_by})).collect::<Vec<_>>(),
                "parallel": self.options.parallel,
                "verify": self.options.verify,
                "schema": self.options.schema,
            }),
            keep_state: self.keep_keys,
            drop_others: self.pg_drop_others,
            lock_wait: self.pg_lock_wait,
            cancel: self.options.cancel.clone(),
            say,
            grants: self.pg_grants,
            resumable: self.resumable,
            resume: self.resume,
            fillfactor: self.fillfactor(),
        };
        // PostgreSQL first: a wrong URI, password or an occupied schema
        // fails before Firebird is attached.
        let destination = PostgresDestination::open(target.clone(), options)?;
        if let (Some(percent), Some(_)) = (self.pg_fillfactor, destination.base_state()) {
            return Err(Error::Usage(format!(
                "--pg-fillfactor {percent}: schema {schema} is kept in sync, and a sync leaves \
                 its tables as their load made them; leave out --pg-fillfactor, or load again \
                 with --overwrite --keep-keys --pg-fillfactor {percent}"
            )));
        }
        if self.keep_keys || destination.base_state().is_some() {
            let summary = self.keep_in_sync(&destination, &schema, progress)?;
            let loaded = Loaded {
                synced: destination.base_state().is_some(),
                ..Loaded::of(&destination, schema, summary)
            };
            if self.options.verify && loaded.synced {
                // A sync read only what changed: its check reads the
                // tables whole once the sync is in (docs/postgresql.md),
                // after the sync's turn on the target ends.
                drop(destination);
                self.verify_target(target, &loaded.schema, progress)?;
            }
            return Ok(loaded);
        }
        let mut this = self.clone();
        // numeric holds INT128's 39 digits: read them all.
        this.options.types.decimal256 = true;
        if self.resumable || self.resume {
            return this.load_resumable(destination, schema, progress);
        }
        let prepared = this.prepare()?;
        fbunload_plan::query::unique_column_names(&prepared.plan)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let summary = prepared.run(&destination, progress)?;
        Ok(Loaded::of(&destination, schema, summary))
    }

    /// A load that journals its units in its staging schema, or goes on
    /// from those a stopped one journaled (`crate::pgresume`).
    fn load_resumable(
        mut self,
        destination: PostgresDestination,
        schema: String,
        progress: &dyn Progress,
    ) -> Result<Loaded, Error> {
        let filter = self.table_filter()?;
        let format = crate::Format::batches(crate::format::columnar::ArrowFormat);
        let request = crate::describe::Request {
            database: &self.connect.database,
            filter: &filter,
            options: &self.options,
            format: &format,
            part_limits: self.part_limits,
            started: std::time::SystemTime::now(),
        };
        let mine = crate::describe::requested(&request);
        let shown = format!(
            "staging schema {} of {}",
            destination.staging(),
            destination.target().shown()
        );
        self.filter.resumable = Some(match destination.stopped_load() {
            Some(stopped) => {
                let theirs: std::collections::BTreeMap<String, serde_json::Value> = stopped
                    .start
                    .get("options")
                    .cloned()
                    .and_then(|o| serde_json::from_value(o).ok())
                    .unwrap_or_default();
                crate::resume::refuse_other_options(&shown, &theirs, &mine)?;
                let first = crate::resume::since_of(&stopped.start).ok_or_else(|| {
                    Error::Usage(format!(
                        "--resume: {shown}: its first snapshot's marks are not a run's; start \
                         again with --overwrite"
                    ))
                })?;
                self.options.plan.unit_pages = stopped
                    .start
                    .get("unit_pages")
                    .and_then(serde_json::Value::as_u64);
                fbunload_plan::incremental::Resumable {
                    first: Some(first),
                    finished: stopped
                        .units
                        .iter()
                        .map(|u| (u.table.clone(), u.first_slot, u.end_slot))
                        .collect(),
                }
            }
            None => fbunload_plan::incremental::Resumable::default(),
        });
        let prepared = self.prepare()?;
        fbunload_plan::query::unique_column_names(&prepared.plan)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let listed = prepared.plan.listed_len();
        let resuming = crate::pgresume::PgResume::new(&destination, mine);
        let mut summary = prepared.run(&resuming, progress).map_err(|e| match e {
            // Stopped, not failed: what it finished stays for --resume.
            Error::Interrupted => Error::InterruptedResumable {
                area: shown.clone(),
            },
            e => e,
        })?;
        let kept = resuming.tally.kept_rows.lock().unwrap().clone();
        for (table, rows) in summary.tables.iter_mut().zip(kept) {
            table.rows += rows;
        }
        summary.tables.truncate(listed);
        Ok(Loaded {
            resumed: resuming.resumed(),
            ..Loaded::of(&destination, schema, summary)
        })
    }
}

impl Unload {
    /// `--pg-verify-only`: compares the tables of schema `schema` (default
    /// `public`) of the PostgreSQL database at `uri` with the rows read
    /// from Firebird now, loading nothing ([`PG_VERIFY_ONLY_HELP`]).
    pub fn verify_postgres(
        &self,
        uri: &str,
        schema: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<Summary, Error> {
        self.table_filter()?;
        let loading = [
            ("--overwrite", self.reuse == Reuse::Overwrite),
            ("--keep-keys", self.keep_keys),
            ("--pg-drop-others", self.pg_drop_others),
            ("--pg-grants", self.pg_grants),
            ("--pg-fillfactor", self.pg_fillfactor.is_some()),
            ("--since", self.since.is_some()),
            ("--journal", self.journal.is_some()),
        ];
        if let Some((flag, _)) = loading.iter().find(|(_, given)| *given) {
            return Err(Error::Usage(format!(
                "--pg-verify-only loads nothing: leave out {flag}"
            )));
        }
        let target = Target::parse(uri).map_err(Error::Usage)?;
        self.verify_target(target, schema.unwrap_or(DEFAULT_SCHEMA), progress)
    }

    fn verify_target(
        &self,
        target: Target,
        schema: &str,
        progress: &dyn Progress,
    ) -> Result<Summary, Error> {
        let options = PostgresOptions {
            schema: schema.to_string(),
            verify: true,
            verify_only: true,
            create_tables: self.options.schema,
            lock_wait: self.pg_lock_wait,
            cancel: self.options.cancel.clone(),
            ..PostgresOptions::default()
        };
        let destination = PostgresDestination::open(target, options)?;
        let mut this = self.clone();
        // As a load reads them: numeric holds INT128's 39 digits.
        this.options.types.decimal256 = true;
        this.options.verify = false;
        this.keep_keys = false;
        this.since = None;
        this.journal = None;
        let prepared = this.prepare()?;
        prepared.run(&destination, progress)
    }
}

impl Unload {
    /// `--plan -o postgresql://...`: what a load of `prepared`'s tables
    /// into `schema` of `uri` would do (a full load, a sync or refused;
    /// what `--overwrite` replaces; the catalog objects made and
    /// reported), changing nothing.
    pub fn plan_postgres(
        &self,
        prepared: &crate::Prepared,
        uri: &str,
        schema: Option<&str>,
    ) -> Result<TargetPlan, Error> {
        let target = Target::parse(uri).map_err(Error::Usage)?;
        let options = PostgresOptions {
            schema: schema.unwrap_or(DEFAULT_SCHEMA).to_string(),
            overwrite: self.reuse == Reuse::Overwrite,
            create_tables: self.options.schema,
            grants: self.pg_grants,
            keep_state: self.keep_keys,
            ..PostgresOptions::default()
        };
        let model = match self.options.schema {
            true => Some(prepared.schema_model()?),
            false => None,
        };
        fbunload_dest_postgres::plan_target::plan_target(
            &target,
            &options,
            &prepared.plan,
            &prepared.schemas,
            model.as_ref(),
        )
    }
}

impl Unload {
    /// That the database publishes to a journal in `archive` (its own:
    /// the segments there carry its GUID): what `fbunload follow` needs.
    pub(crate) fn check_journal(&self, archive: &std::path::Path) -> Result<(), Error> {
        let options = crate::follow::FollowOptions {
            database: self.connect.database.clone(),
            user: self.connect.user.clone(),
            password: self.connect.password.clone(),
            client_library: self.client_library.clone(),
            archive: archive.to_path_buf(),
            live: None,
            target: String::new(),
            schema: None,
            until_idle: None,
            from: None,
            memory_budget: self.memory_budget,
            since: None,
            every: None,
        };
        crate::follow::check_setup(&options)
    }

    /// A load that keeps its state in the target (`--keep-keys`), or a
    /// sync from the state the target holds: the file machinery of
    /// incremental runs reads, into a private directory, while the rows go
    /// on to PostgreSQL (`crate::pgsync`); then one transaction publishes
    /// the rows (or applies the link) with the new state.
    fn keep_in_sync(
        &self,
        destination: &PostgresDestination,
        schema: &str,
        progress: &dyn Progress,
    ) -> Result<Summary, Error> {
        let work = crate::pgsync::PrivateDir::new()?;
        let mut this = self.clone();
        // numeric holds INT128's 39 digits: read them all.
        this.options.types.decimal256 = true;
        this.keep_keys = true;
        this.reuse = Reuse::Refuse;
        let base = match destination.base_state() {
            Some(_) => {
                let dir = work.path().join("base");
                let manifest = crate::pgsync::write_base(&dir, destination, schema)?;
                this.since = Some(dir);
                Some(manifest)
            }
            None => None,
        };
        let run = work.path().join("run");
        let format = crate::Format::batches(crate::format::columnar::ArrowFormat);
        let (summary, manifest) =
            this.to_directory_with(&run, format, progress, Some(destination))?;
        // Stopped once the rows were read: the target stays as it was.
        if self
            .options
            .cancel
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(Error::Interrupted);
        }
        let state = crate::pgsync::new_state(&run, &manifest)?;
        match base {
            None => destination.publish_with_state(state)?,
            Some(base) => {
                let links = crate::pgsync::links(&run, &manifest, &base, destination, schema)?;
                let cancel = self.options.cancel.clone();
                // A stop cancels the sync's statement in progress too.
                destination.stoppable(|| {
                    destination.apply_sync(&links, state, &|| {
                        cancel.load(std::sync::atomic::Ordering::SeqCst)
                    })
                })?;
            }
        }
        Ok(summary)
    }
}
