//! Loading into PostgreSQL: [`Unload::to_postgres`], the options the
//! command line and Python spell from here, and what a load returns.

use fbunload_dest_postgres::{PostgresDestination, PostgresOptions, Target};
use serde_json::json;

use crate::output::OutputOptions;
use crate::{Error, Progress, Reuse, Summary, Unload};

pub use fbunload_dest_postgres::{
    is_postgres_uri, pg_name, Untranslated, DEFAULT_SCHEMA, REPORT_TABLE, RUNS_TABLE,
};

/// What `--pg-schema` and Python's `pg_schema` say in help.
pub const PG_SCHEMA_HELP: &str = "The PostgreSQL schema to load into when -o is a \
    postgresql:// URI [default: public]. It is replaced whole, in one transaction, once the new \
    tables are complete; one that holds tables is refused unless --overwrite, or, where an \
    earlier run kept its state there (--keep-keys), synced: only what changed since is applied";

/// What a load into PostgreSQL did.
#[derive(Debug)]
pub struct Loaded {
    pub summary: Summary,
    /// The target, without its password.
    pub target: String,
    pub schema: String,
    /// What did not translate (views, triggers, CHECK constraints,
    /// computed columns, expression indices, non-constant defaults), with
    /// its Firebird source; also in the target's `_fbunload_untranslated`.
    pub untranslated: Vec<Untranslated>,
    /// Whether the run synced a target that kept its state (only the
    /// changes applied) rather than loading it whole.
    pub synced: bool,
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
        let filter = self.table_filter()?;
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
        let schema = schema.unwrap_or(DEFAULT_SCHEMA).to_string();
        let options = PostgresOptions {
            schema: schema.clone(),
            overwrite: self.reuse == Reuse::Overwrite,
            create_tables: self.options.schema,
            verify: self.options.verify,
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
        };
        // PostgreSQL first: a wrong URI, password or an occupied schema
        // fails before Firebird is attached.
        let destination = PostgresDestination::open(target, options)?;
        if self.keep_keys || destination.base_state().is_some() {
            let summary = self.keep_in_sync(&destination, &schema, progress)?;
            return Ok(Loaded {
                summary,
                target: destination.target().shown().to_string(),
                schema,
                untranslated: destination.untranslated(),
                synced: destination.base_state().is_some(),
            });
        }
        let mut this = self.clone();
        // numeric holds INT128's 39 digits: read them all.
        this.options.types.decimal256 = true;
        let prepared = this.prepare()?;
        fbunload_plan::query::unique_column_names(&prepared.plan)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let summary = prepared.run(&destination, progress)?;
        Ok(Loaded {
            summary,
            target: destination.target().shown().to_string(),
            schema,
            untranslated: destination.untranslated(),
            synced: false,
        })
    }
}

impl Unload {
    /// That the database publishes to a journal in `archive` (its own:
    /// the segments there carry its GUID): what `fbunload follow` needs.
    fn check_journal(&self, archive: &std::path::Path) -> Result<(), Error> {
        let options = crate::follow::FollowOptions {
            database: self.connect.database.clone(),
            user: self.connect.user.clone(),
            password: self.connect.password.clone(),
            client_library: self.client_library.clone(),
            archive: archive.to_path_buf(),
            live: None,
            target: String::new(),
            schema: String::new(),
            until_idle: None,
            from: None,
            memory_budget: self.memory_budget,
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
            Some(state) => {
                let dir = work.path().join("base");
                let manifest = crate::pgsync::write_base(&dir, state, schema)?;
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
                destination.apply_sync(&links, state, &|| {
                    cancel.load(std::sync::atomic::Ordering::SeqCst)
                })?;
            }
        }
        Ok(summary)
    }
}
