//! Command-line flags, with help text that teaches the tool.

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use fbunload::PartLimits;

/// The options `-h` shows, those most runs use, each in a line; `--help`
/// shows every option with its whole text.
pub const SHORT_HELP: &[(&str, &str)] = &[
    (
        "database",
        "Database: a file path (embedded engine), host:path or inet://host:port/path",
    ),
    ("user", "User name"),
    ("password", "Password (or ISC_PASSWORD; never printed)"),
    (
        "tables",
        "Tables: an SQL SIMILAR TO pattern, e.g. 'ORDER%' or 'STOCK|ITEM'; names as in SQL: \
        stock is STOCK, '\"stock\"' exact [default: all]",
    ),
    ("exclude", "Tables to leave out: a pattern as for --tables"),
    (
        "where_",
        "Rows: an SQL condition, e.g. 'S_W_ID = 7', or 'TABLE:COND'",
    ),
    (
        "output",
        "Output directory (required), - for standard output, or postgresql://USER@HOST/DB",
    ),
    (
        "format",
        "Output format: csv (its first line the column names), tsv, jsonl, parquet, arrow",
    ),
    (
        "parallel",
        "Worker attachments [default: number of CPU cores]",
    ),
    (
        "plan",
        "Print what would be read, and how it is cut, without reading a row",
    ),
    ("help", ""),
    ("version", ""),
];

/// Each subcommand in a line, for `-h`.
const SHORT_COMMANDS: &[(&str, &str)] = &[
    (
        "check",
        "Check an output directory's files against its manifest.json",
    ),
    (
        "apply",
        "Apply a change set (a run with --since) to the run it was taken since",
    ),
    ("sample", "Create a sample database to try fbunload on"),
    (
        "follow",
        "Apply a database's replication journal to a --keep-keys PostgreSQL schema, live (or write it as change sets, or stream it)",
    ),
];

#[derive(Parser, Debug)]
#[command(
    name = "fbunload",
    version,
    about = "Unload Firebird tables in parallel, from one consistent snapshot, to CSV, TSV, JSON \
        Lines, Parquet or Arrow.",
    long_about = "Unload Firebird tables in parallel, from one consistent snapshot, to CSV, TSV, \
        JSON Lines, Parquet or Arrow.\n\n\
        A main attachment starts a read-only snapshot transaction; every worker attaches on its \
        own and joins that same snapshot (Firebird 4+), so all files together show the database \
        at one instant. Large tables are split by pointer pages and the pieces handed to \
        whichever worker is free. Each table becomes <output>/<TABLE>.csv (or .tsv, .jsonl, \
        .parquet, .arrow), written under a temporary name and renamed only when complete; its \
        bytes are the same for any --parallel. --views and --query unload views and the results \
        of SELECTs the same way, at the same snapshot. <output>/schema.sql holds the DDL that recreates \
        the tables elsewhere, read at the same snapshot (--no-schema skips it). Last comes \
        <output>/manifest.json: the snapshot, the options, and every table's rows, columns and \
        files with their SHA-256; `fbunload check <output>` compares the files with it later. A \
        directory that holds another run's files is refused unless --overwrite.",
    after_help = "Examples:\n  \
        fbunload sample shop.fdb\n  \
        fbunload -d shop.fdb -o out\n  \
        fbunload -d inet://dbhost/erp -u SYSDBA -t 'ORDER%' -f parquet -o lake\n\n\
        That is the short page: fbunload --help shows every option (incremental runs, parts, \
        queries, servers, output details), as do `man fbunload` and docs/command-line.md.",
    after_long_help = "Examples:\n  \
        fbunload -d /data/horses.fdb -u SYSDBA -p masterkey -o ./out\n  \
        fbunload -d inet://dbhost:3050/horses -u SYSDBA --tables 'COLOR|BREED|HORSE' --parallel 6 -o ./out\n  \
        fbunload -d dbhost:/data/erp.fdb --exclude 'TMP\\_%' --plan\n  \
        fbunload -d dbhost:/data/erp.fdb -f parquet --verify -o ./lake\n  \
        fbunload -d dbhost:/data/erp.fdb -f parquet --verify --overwrite -o ./lake\n  \
        fbunload -d dbhost:/data/erp.fdb --tables ORDERS --max-bytes 1G --compress zstd -o ./out\n  \
        fbunload check ./lake\n  \
        fbunload -d dbhost:/data/erp.fdb --tables ORDERS -o - | psql -c '\\copy orders from pstdin csv header'\n  \
        fbunload -d dbhost:/data/erp.fdb -t '%' --views --query 'SELECT o.ID, c.NAME FROM ORDERS o JOIN CUSTOMERS c ON c.ID = o.CUST' --name ORDER_NAMES --split-by ORDERS -o ./out\n\n\
        The password can also come from ISC_PASSWORD, the user from ISC_USER.",
    // `fbunload check DIR` stands alone; every unload keeps its flags.
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Database: a file path (opens the embedded engine), host:path, host/port:path or inet://host:port/path
    #[arg(
        short = 'd',
        long,
        value_name = "DSN",
        required_unless_present_any = ["generate", "pg_end_sync"]
    )]
    pub database: Option<String>,

    /// User name
    #[arg(short = 'u', long, env = "ISC_USER")]
    pub user: Option<String>,

    /// Password. Never printed; fbunload overwrites it in its command line as it starts, so
    /// `ps` shows -p xxxx (ISC_PASSWORD avoids even that first moment)
    #[arg(short = 'p', long, env = "ISC_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,

    /// SQL role
    #[arg(long)]
    pub role: Option<String>,

    /// The encoding of text in columns declared CHARACTER SET NONE, e.g. WIN1252 (UTF8 is
    /// checked: bytes that are not UTF-8 stop the run). Every other column is decoded from the
    /// character set it is declared with, whatever this says; output text is always UTF-8
    #[arg(long, default_value = "UTF8", value_name = "CHARSET")]
    pub charset: String,

    /// Tables to unload: an SQL SIMILAR TO pattern matched against the whole table name, e.g.
    /// 'COLOR|BREED|HORSE' or 'ORDER%'. Names follow SQL here as in every option that takes one
    /// (--exclude, --views, --columns, --where's TABLE:, --split-by): unquoted is upper-cased
    /// (stock is STOCK, order% is ORDER%), double-quoted is exact, every character literal
    /// ('"Mixed Case"', '"tmp_"%'). Commas list alternatives too ('COLOR,BREED'); write a comma
    /// in a name as \, . An alternative with no wildcard but _ is a name, and one that names no
    /// table is an error (so is one in --exclude or --views): -t 'STOCK|ORDRES' is refused, not
    /// read as STOCK alone [default: all user tables]
    #[arg(short = 't', long, value_name = "PATTERN")]
    pub tables: Option<String>,

    /// Tables to leave out: a pattern as for --tables
    #[arg(short = 'x', long, value_name = "PATTERN")]
    pub exclude: Option<String>,

    /// Columns to unload, in this order: 'COL,COL' for the one table selected, or
    /// 'TABLE:COL,COL' (repeat the option for several tables). Unquoted names are upper-cased
    /// as in SQL; quote others: '"Odd name",ID'
    #[arg(long, value_name = "[TABLE:]LIST")]
    pub columns: Vec<String>,

    /// Rows to unload: an SQL condition, ANDed to every unit's DB_KEY range so the unload
    /// stays parallel and identical for any --parallel, e.g. 'S_W_ID = 7'; 'TABLE:COND' for
    /// one of several tables (repeat the option)
    #[arg(long = "where", value_name = "[TABLE:]COND")]
    pub where_: Vec<String>,

    /// Unload the result of a SELECT too, at the same snapshot, to NAME.<ext>: follow each
    /// --query with its --name (and, to read it in parallel, --split-by). Any SELECT (or
    /// WITH ... SELECT) in one piece: no ;, every quote, comment and parenthesis closed; no
    /// GEN_ID(S, n) or NEXT VALUE FOR, which would move a sequence. With --query or --views
    /// and no --tables or --exclude, no table is unloaded
    #[arg(long, value_name = "SQL")]
    pub query: Vec<String>,

    /// The name of the --query before it: its file is NAME.csv (or .parquet...), named the
    /// way table files are, and it must not be the name of a table or view unloaded too
    #[arg(long, value_name = "NAME")]
    pub name: Vec<String>,

    /// Read the --query before it in parallel, by DB_KEY ranges of TABLE, which its FROM must
    /// begin with (an alias is fine): each unit reads the query with that table replaced by
    /// its rows in the unit's range. Outside its subqueries the query may not group,
    /// aggregate (COALESCE(MAX(X), 0) too), sort, limit, combine (UNION) or use window
    /// functions or RIGHT/FULL joins
    #[arg(long, value_name = "TABLE")]
    pub split_by: Vec<String>,

    /// Unload views too, each as one unit, at the same snapshot: all user views, or those
    /// whose names match a pattern as for --tables, e.g. --views 'V\_%'
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "%")]
    pub views: Option<String>,

    /// Worker attachments [default: number of CPU cores]
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub parallel: Option<u32>,

    #[arg(long, value_name = "N|auto", default_value = "auto", help = fbunload::Processes::HELP)]
    pub processes: fbunload::Processes,

    /// Output directory (created if missing; required, there is no default); one file per
    /// table, schema.sql and manifest.json. `-` writes the one
    /// selected table to standard output: csv, tsv and jsonl as the unload goes, unit by
    /// unit in order; parquet and arrow once the file is complete.
    /// `postgresql://USER@HOST:PORT/DBNAME` loads the tables into PostgreSQL instead, with their
    /// keys, indices and sequences, their CHECKs, views, procedures and triggers translated,
    /// in one transaction (docs/postgresql.md)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    #[arg(long, value_name = "NAME", help = fbunload::postgres::PG_SCHEMA_HELP)]
    pub pg_schema: Option<String>,

    #[arg(long, value_name = "SECONDS", help = fbunload::postgres::PG_LOCK_WAIT_HELP)]
    pub pg_lock_wait: Option<u64>,

    #[arg(long, help = fbunload::postgres::PG_DROP_OTHERS_HELP)]
    pub pg_drop_others: bool,
    #[arg(long, help = fbunload::postgres::PG_END_SYNC_HELP)]
    pub pg_end_sync: bool,

    #[arg(long, help = fbunload::postgres::PG_VERIFY_ONLY_HELP)]
    pub pg_verify_only: bool,

    #[arg(long, help = fbunload::postgres::PG_GRANTS_HELP)]
    pub pg_grants: bool,

    #[arg(long, value_name = "PERCENT", help = fbunload::postgres::PG_FILLFACTOR_HELP)]
    pub pg_fillfactor: Option<u8>,

    /// Replace the run already in the output directory, once the new one is complete: until
    /// then the old run stays whole (a rerun that fails or is killed leaves it), then the new
    /// files replace it and what its manifest.json lists beyond them is removed; files it does
    /// not list are left alone. Needs room for both runs until then. Without this, a directory
    /// holding another run's manifest.json or table files is refused, so two snapshots never
    /// mix
    #[arg(long)]
    pub overwrite: bool,

    /// Incremental unload (Firebird 4+): of each table, the rows inserted or updated since the
    /// snapshot of the run in DIR (T.upserts.<ext>) and the primary keys of the rows deleted
    /// since (T.deletes.<ext>), at one new snapshot. A table without a primary key, new, or
    /// altered (its columns or record format) is unloaded whole (T.<ext>), as is every table
    /// of a database restored from a backup or copied to another file since; the summary and
    /// manifest.json say which and why. A file-level copy put back in the database's own file
    /// is not told apart: start a new chain (--keep-keys) after one. DIR must have kept its
    /// keys (--keep-keys, or an earlier --since), or be a change set `fbunload follow` wrote from
    /// the journal (then what changed since the chain's base is read); this run keeps its own
    /// keys (T.keys.parquet).
    /// Every page is still read on the server: for the changed rows, and for a count of the
    /// unchanged ones per unit, which finds the units that lost rows (only their keys are read
    /// again). `fbunload apply` makes the new state from DIR and this run
    #[arg(long, value_name = "DIR")]
    pub since: Option<PathBuf>,

    /// Keep every table's primary keys, and where each row lies (T.keys.parquet), so that a
    /// later run can start from this one with --since (Firebird 4+). With -o postgresql://, the
    /// keys are kept in the target (<schema>._fbunload_state), and each later run into it
    /// applies only what changed since, in one transaction (docs/postgresql.md)
    #[arg(long)]
    pub keep_keys: bool,

    /// Make a run resumable (Firebird 4+), so that a run that dies (kill -9, power loss, a
    /// server restart) can be continued with --resume. Into a directory each unit is also kept,
    /// as it finishes, in DIR/.fbunload-resume (removed once the run is published): a second
    /// write of every row while the run lasts. Into postgresql:// each unit's COPY commits with
    /// its journal row in the staging schema, which a failed or stopped load then keeps
    /// (docs/reliability.md)
    #[arg(long)]
    pub resumable: bool,

    /// Continue the --resumable run that stopped in -o DIR or its postgresql:// staging schema,
    /// with the same options: the units it finished that no row of changed since are taken from
    /// what it wrote, the others read at a new snapshot, so every file (every table) holds that
    /// one snapshot. Implies --resumable
    #[arg(long)]
    pub resume: bool,

    /// With --keep-keys (into postgresql:// or a directory): the database's
    /// journal_archive_directory (replication.conf), which `fbunload follow` applies (or writes
    /// as change sets after the directory: follow --since) from where this run's snapshot ends.
    /// The load first checks that the database publishes its changes (ALTER DATABASE ENABLE
    /// PUBLICATION) and that DIR holds its journal (docs/postgresql.md, "Live")
    #[arg(long, value_name = "DIR", requires = "keep_keys")]
    pub journal: Option<PathBuf>,

    /// Output format: csv, tsv (CSV rules with a tab), jsonl (one JSON object per row),
    /// parquet, or arrow (Arrow IPC file)
    #[arg(short = 'f', long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,

    /// Compress csv, tsv and jsonl files as a whole (.gz or .zst is added to the name)
    #[arg(long, value_enum, value_name = "gzip|zstd")]
    pub compress: Option<Compress>,

    /// Parquet only: write each table as a directory <TABLE>.parquet/ of part files of about
    /// 1,048,576 rows (whole row groups) each, for engines that read a directory as one
    /// table. --max-rows and --max-bytes cut tables into numbered files instead, in any format
    #[arg(long)]
    pub split: bool,

    /// Cut each table into numbered files of N rows each, the last fewer:
    /// <TABLE>.000001.csv, <TABLE>.000002.csv, ... beside each other in the output directory,
    /// each complete on its own (the csv/tsv header, a whole gzip/zstd stream, Parquet and
    /// Arrow schema and footer) and listed in manifest.json. The parts are the same for any
    /// --parallel, and appear only once the whole table is written; an empty table is one
    /// part. Not with -o -
    #[arg(long, value_name = "N")]
    pub max_rows: Option<String>,

    /// Cut each table into numbered files (as --max-rows) of about SIZE bytes: a part ends at
    /// the first row end at or past SIZE, so it passes SIZE by less than one row (Parquet: one
    /// row group and the footer; Arrow: one batch of 65,536 rows). csv, tsv and jsonl count the
    /// bytes before --compress, so compressed parts are smaller. SIZE is bytes, or with K, M,
    /// G, T: powers of 1000, as the summary's MB (500M, 2G, 1.5G), or KiB, MiB, GiB, TiB:
    /// powers of 1024. With --max-rows, a part ends at whichever limit comes first
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,

    /// Parquet only: rows per row group [default: 131072, or fewer where a group's data
    /// reaches 32 MB; given, exactly N]. Row groups are encoded in parallel, so smaller
    /// groups spread a table over more workers sooner; larger ones compress a little better
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub row_group_rows: Option<u32>,

    /// Parquet column compression
    #[arg(long, value_enum, default_value_t = ParquetCompression::Zstd)]
    pub compression: ParquetCompression,

    /// INT128 and NUMERIC/DECIMAL(19..38) as Arrow decimal256(39, s), which holds every value
    /// their INT128 storage can, instead of decimal128(38, s), which every reader takes
    /// (polars, Spark and DuckDB have no wider decimal) and which fbunload otherwise refuses
    /// to fill with a value of 39 digits (parquet, arrow)
    #[arg(long)]
    pub decimal256: bool,

    /// csv, tsv: a first line with the column names is written by default (readers such as
    /// pyarrow, polars, pandas and DuckDB take the first line as the names); --header says so
    /// again
    #[arg(long, overrides_with = "no_header")]
    pub header: bool,

    /// csv, tsv: no header line, for loaders that take every line as a row
    #[arg(long, overrides_with = "header")]
    pub no_header: bool,

    /// Field delimiter (csv): one ASCII character, or 'tab'
    #[arg(long, default_value = ",", value_name = "CHAR")]
    pub delimiter: String,

    /// Text written for NULL (csv, tsv). A value that would read back as NULL is quoted, so
    /// with the default (empty) an empty string is written as ""
    #[arg(long, default_value = "", value_name = "TEXT")]
    pub null: String,

    /// How OCTETS and binary BLOB values are written (csv, tsv, jsonl)
    #[arg(long, value_enum, default_value_t = Binary::Hex)]
    pub binary: Binary,

    /// End records with CRLF instead of LF (csv, tsv)
    #[arg(long)]
    pub crlf: bool,

    /// Data pages per unit of work (a unit is the piece of a table one worker reads at a
    /// time). Default: about 8 units per worker over the whole run, at least 64 pages and at
    /// most one pointer page, so the last units are small and no worker idles at the end; a
    /// table of mostly BLOBs is cut by its BLOB bytes instead (about 64 MiB a unit, with more
    /// than one worker, on Firebird 5)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub unit_pages: Option<u64>,

    // Global: `fbunload apply --memory MB` bounds the keys it holds too.
    #[arg(long = "memory", global = true, default_value_t = fbunload::DEFAULT_MEMORY_MB, value_name = "MB",
          help = fbunload::MEMORY_HELP)]
    pub memory_mb: usize,

    /// Rows per Arrow batch (benchmarks only: benches/fetch-and-buffers.sh measured 8192 best)
    #[arg(long, hide = true, value_name = "ROWS", value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_rows: Option<u64>,

    /// Path of libfbclient [default: $FIREBIRD, then the firebird-embedded Python package,
    /// then the system library]
    #[arg(long, value_name = "PATH")]
    pub client_lib: Option<PathBuf>,

    /// Compress a server's wire (zlib), where the server allows it (WireCompression). Pays on
    /// slow networks; on a fast one it costs CPU on both ends
    #[arg(long)]
    pub wire_compression: bool,

    /// Encryption of a server's wire (WireCrypt): disabled saves CPU on both ends (see
    /// docs/server.md) where the server allows it, on a network you trust;
    /// the server's own WireCrypt decides what it accepts (Firebird 5's default, Required,
    /// refuses disabled) [default: enabled]
    #[arg(long, value_enum, value_name = "MODE")]
    pub wire_crypt: Option<WireCrypt>,

    /// Print the plan (tables, pointer pages, units, estimated rows and size, snapshot) and exit
    /// without unloading; the estimates count rows on at most 128 data pages a table
    /// (docs/command-line.md, Estimates). With -o postgresql://, also what the load would do
    /// there, changing nothing: a full load, a sync or refused, what --overwrite replaces, and
    /// the catalog objects it would make and report (docs/postgresql.md)
    #[arg(long)]
    pub plan: bool,

    /// Firebird 3 and older cannot share a snapshot between attachments, so fbunload reads
    /// them with one worker in one transaction. With this flag it reads tables in parallel
    /// instead, each worker in a snapshot of its own: every table is consistent in itself,
    /// but the tables are NOT mutually consistent. No effect on Firebird 4 and later
    #[arg(long)]
    pub allow_inconsistent: bool,

    /// Do not write schema.sql, the DDL that recreates the unloaded tables (types, defaults,
    /// keys, indices, sequences at their values), read at the same snapshot as the data. Only
    /// an output directory gets one, never -o -. With -o postgresql://...: load into the tables
    /// that exist there (columns matched by name) instead of creating them; a column whose
    /// type there would round, cut or re-read its values is refused
    #[arg(long)]
    pub no_schema: bool,

    /// After unloading, count every table's rows at the same snapshot and fail if any file
    /// has a different number of rows. With -o postgresql://: also compare, once the tables
    /// are published (a sync: once it is in, reading the tables whole again), every column's
    /// values in PostgreSQL with the rows read, range by range in key order; a difference
    /// names the table, the range's first and last key and the columns (docs/postgresql.md)
    #[arg(long)]
    pub verify: bool,

    /// Seconds a query may wait to be prepared before fbunload gives up. A prepare waits while
    /// another attachment's DROP or ALTER of one of its tables waits to commit; the server
    /// cannot cancel that wait, so after this long fbunload prints which table and ends (status
    /// 1, no manifest.json)
    #[arg(long, default_value_t = 60, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lock_timeout: u64,

    /// Seconds a worker may wait for the database to answer one call (a prepare, rows, a blob)
    /// before fbunload gives up: a server that stops answering without closing the connection
    /// (stopped, stuck, a firewall that drops the connection) otherwise leaves the run waiting
    /// for ever. Then it closes its connections, names the table and fails (status 1, no
    /// manifest.json); 0: no limit, at most a year
    #[arg(long, default_value_t = 1800, value_name = "SECONDS",
          value_parser = stall_timeout_seconds)]
    pub stall_timeout: u64,

    /// Benchmark aid: read every row with the same attachments, snapshot and units, and drop
    /// it; no files are written. Shows how fast the engine can deliver the rows
    #[arg(long)]
    pub fetch_only: bool,

    /// No progress display and no summary
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// How progress is shown on stderr: a line for people while stderr is a terminal (bar),
    /// or one JSON object per line for every unit and table, the summary last (json)
    #[arg(long, value_enum, value_name = "bar|json", default_value_t = ProgressMode::Bar)]
    pub progress: ProgressMode,

    /// Print a completion script for a shell, or the man page, and exit: e.g.
    /// `fbunload --generate bash > ~/.local/share/bash-completion/completions/fbunload`,
    /// `fbunload --generate man > ~/.local/share/man/man1/fbunload.1`
    #[arg(long, value_enum, value_name = "WHAT")]
    pub generate: Option<Generate>,

    /// The options typed on the command line (not defaults), by clap id.
    #[arg(skip)]
    typed: Vec<String>,

    /// --query, --name and --split-by in the order typed, for pairing.
    #[arg(skip)]
    query_options: Vec<(QueryOption, String)>,
}

/// The options that describe one query, each belonging to the --query
/// typed before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryOption {
    Query,
    Name,
    SplitBy,
}

/// What fbunload does other than unloading.
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check an output directory against its manifest.json: every file it lists is read again
    /// and its size and SHA-256 compared, and a file it does not list that is named like a
    /// run's (an added T.000005.csv part) is a difference too. Each difference is printed on
    /// its own line naming the file; the exit status is 1 on any difference or if a file or the
    /// manifest is missing, 0 when every file matches. A check changes nothing: a move of a
    /// run's files that a killed fbunload left half done is one difference, unless --finish
    Check {
        /// The output directory of a complete run
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// First finish the move of a complete run's files into place that a killed fbunload
        /// left half done (.fbunload-switch, its plan checked first), as the next run into the
        /// directory would
        #[arg(long)]
        finish: bool,
    },
    /// Apply a change set (a run with --since) to the run it was taken since: every table's
    /// state at the change set's snapshot, written to a new directory in the same format, with
    /// a manifest that `fbunload check` verifies and a later apply starts from. Parquet and
    /// Arrow runs; both directories' files are checked against their manifests first. The keys
    /// of the change set are held within --memory (more passes over OLD's rows beyond it)
    Apply {
        /// The chain's base (the run with --keep-keys) or the state an earlier apply made; never
        /// a change set (apply that to its own OLD first)
        #[arg(value_name = "OLD")]
        old: PathBuf,
        /// The change set: the run made with --since OLD
        #[arg(value_name = "CHANGES")]
        changes: PathBuf,
        /// The new directory for the state
        #[arg(short, long, value_name = "STATE")]
        output: PathBuf,
    },
    /// Follow a database's replication journal into PostgreSQL: the transactions committed after
    /// the snapshot of the schema's --keep-keys load are applied in commit order, each in one
    /// PostgreSQL transaction that also records the journal position (table _fbunload_journal),
    /// so a restart after any stop or kill applies each once. Rolled-back work and undone
    /// savepoints never arrive; sequences follow; DDL in the journal stops the follow, naming the
    /// statement. Runs until SIGINT/SIGTERM (exit 0) or --until-idle. With --since BASE -o DIR
    /// --every INTERVAL: change sets that `fbunload apply` takes instead. Set-up:
    /// docs/postgresql.md, "Live"
    Follow {
        /// Database: a file path (opens the embedded engine), host:path or inet://host:port/path
        #[arg(short = 'd', long, value_name = "DSN")]
        database: String,
        /// User name
        #[arg(short = 'u', long, env = "ISC_USER")]
        user: Option<String>,
        /// Password (or ISC_PASSWORD)
        #[arg(short = 'p', long, env = "ISC_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        /// The database's journal_archive_directory (replication.conf)
        #[arg(long, value_name = "DIR")]
        journal: PathBuf,
        /// The database's journal_directory, read for segments not archived yet (lower lag)
        #[arg(long, value_name = "DIR")]
        journal_live: Option<PathBuf>,
        /// The PostgreSQL target: postgresql://USER@HOST:PORT/DBNAME; or - with --format jsonl:
        /// one JSON object per row change on standard output (op, table, key, after,
        /// transaction, position, resume); or a directory with --since BASE --every INTERVAL: a
        /// chain of change sets (DIR/00000001, ...) that `fbunload apply` applies to BASE
        #[arg(short = 'o', long, value_name = "URI|-|DIR")]
        output: String,
        /// With -o DIR: the --keep-keys --journal run the chain of change sets starts from
        /// (its format and settings are the links'; not one cut into parts)
        #[arg(long, value_name = "BASE")]
        since: Option<PathBuf>,
        /// With -o DIR: write a change set this often, when something changed (10s, 5m, 1h,
        /// 500ms; a bare number is seconds)
        #[arg(long, value_name = "INTERVAL", value_parser = parse_interval)]
        every: Option<std::time::Duration>,
        /// With -o -: jsonl (the only format of a change stream so far)
        #[arg(short = 'f', long, value_name = "FORMAT", value_parser = ["jsonl"])]
        format: Option<String>,
        /// With -o -: go on after the event whose `resume` this is (default: the journal's
        /// first segment)
        #[arg(long, value_name = "RESUME")]
        from: Option<String>,
        /// json: one JSON object per line on stderr after each applied group of transactions
        /// (transactions, changes, position, lag_seconds_at_least, lag_seconds_at_most), and
        /// with -o DIR after each change set written (event link: path, transactions, position)
        #[arg(long, value_name = "MODE", value_parser = ["json"])]
        progress: Option<String>,
        /// With -o postgresql://: the schema the --keep-keys load made (default public)
        #[arg(long, value_name = "SCHEMA")]
        pg_schema: Option<String>,
        /// Exit 0 once no change arrived for SECONDS
        #[arg(long, value_name = "SECONDS")]
        until_idle: Option<f64>,
        /// MiB of row images and blobs one transaction may hold in memory; a bigger one goes on
        /// in unlinked temporary files
        #[arg(long = "memory", value_name = "MB", default_value_t = fbunload::DEFAULT_MEMORY_MB)]
        memory_mb: usize,
        /// The Firebird client library
        #[arg(long, value_name = "PATH")]
        client_lib: Option<PathBuf>,
    },
    /// Create a sample database to try fbunload on, with the embedded engine: TPC-C-like
    /// tables (WAREHOUSE, DISTRICT, CUSTOMER, ITEM, STOCK, ORDERS, ORDER_LINE) and ALL_TYPES,
    /// Mixed Case "Quoted", EMPTY_TABLE and ARRAY_TYPES with every Firebird column type and its
    /// edge values (ARRAY columns of each element type, one and two dimensions). The TPC-C
    /// tables have what an application keeps in the database, for -o postgresql:// to
    /// translate: foreign keys, a key trigger and its generator (ITEM_KEY, ITEM_ID_GEN), a
    /// domain with a CHECK (PRICE), a computed column (CUSTOMER.C_NAME), a view (LOW_STOCK)
    /// and a selectable procedure (ORDER_TOTALS). The defaults make about 370,000 rows in
    /// seconds. Its owner is SYSDBA; the embedded
    /// engine checks no password, so -d PATH needs none (a server serving the file would
    /// check it)
    Sample {
        /// The database file to create
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// TPC-C scale: 10 districts, 30,000 customers and orders, ~300,000 order lines and
        /// --items stock rows per warehouse
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        warehouses: u32,
        /// Rows of ITEM (and of STOCK per warehouse)
        #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
        items: u32,
        /// Make PATH again if it exists. Without it, a PATH that is already this sample (every
        /// table, with the rows these options make, and the objects above) is kept, and any
        /// other file is refused
        #[arg(long)]
        force: bool,
        /// Change about N % of the rows of the sample at PATH (made first if it is not there),
        /// to try incremental runs: STOCK and CUSTOMER rows updated, ORDER_LINE rows deleted,
        /// ITEM and ARRAY_TYPES rows inserted (ARRAY_TYPES' first row always), chosen at random.
        /// Then `--since` a run before writes them
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
        changes: Option<u32>,
        /// Print nothing but errors
        #[arg(short, long)]
        quiet: bool,
        /// The Firebird client library: one with an engine (default: as for an unload)
        #[arg(long, value_name = "PATH")]
        client_lib: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WireCrypt {
    Disabled,
    Enabled,
    Required,
}

impl WireCrypt {
    pub fn wire_options(mode: Option<WireCrypt>, compression: bool) -> fbunload::WireOptions {
        fbunload::WireOptions {
            compression,
            crypt: mode.map(|mode| match mode {
                WireCrypt::Disabled => fbunload::WireCrypt::Disabled,
                WireCrypt::Enabled => fbunload::WireCrypt::Enabled,
                WireCrypt::Required => fbunload::WireCrypt::Required,
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    Bar,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Csv,
    Tsv,
    Jsonl,
    Parquet,
    Arrow,
}

impl From<Format> for fbunload::FormatName {
    fn from(f: Format) -> Self {
        match f {
            Format::Csv => Self::Csv,
            Format::Tsv => Self::Tsv,
            Format::Jsonl => Self::Jsonl,
            Format::Parquet => Self::Parquet,
            Format::Arrow => Self::Arrow,
        }
    }
}

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    Man,
}

impl Generate {
    /// The completion script or the man page, from the flags as clap
    /// knows them, so they never drift from `--help`.
    pub fn write(self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use clap_complete::{Generator, Shell};
        let mut command = Args::command().bin_name("fbunload");
        let shell = match self {
            Generate::Man => return man_page(command, out),
            Generate::Bash => Shell::Bash,
            Generate::Zsh => Shell::Zsh,
            Generate::Fish => Shell::Fish,
            Generate::Elvish => Shell::Elvish,
            Generate::Powershell => Shell::PowerShell,
        };
        // clap_complete::generate would panic on a closed pipe.
        command.build();
        shell.try_generate(&command, out)
    }
}

/// The man page: clap's sections for the name, synopsis, description and
/// options, then the commands (described here: they have no pages of their
/// own), the exit status and the examples.
fn man_page(command: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut page = String::from(".SH COMMANDS\n");
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let operands: Vec<String> = sub
            .get_positionals()
            .map(|a| format!(" \\fI{}\\fR", roff_text(a.get_id().as_str()).to_uppercase()))
            .collect();
        let about = sub
            .get_long_about()
            .or(sub.get_about())
            .map(|a| a.to_string());
        page.push_str(&format!(
            ".TP\n\\fBfbunload {}\\fR{}\n{}\n",
            sub.get_name(),
            operands.concat(),
            roff_text(&about.unwrap_or_default())
        ));
    }
    page.push_str(".SH \"EXIT STATUS\"\n");
    for (status, meaning) in EXIT_STATUSES {
        page.push_str(&format!(".TP\n{status}\n{}\n", roff_text(meaning)));
    }
    let after = command
        .get_after_help()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let (examples, rest) = after.split_once("\n\n").unwrap_or((&after, ""));
    page.push_str(".SH EXAMPLES\n.nf\n");
    for line in examples.lines().skip(1) {
        page.push_str(&format!("{}\n", roff_text(line.trim())));
    }
    page.push_str(&format!(
        ".fi\n.SH ENVIRONMENT\n{}\n",
        roff_text(rest.trim())
    ));
    out.write_all(page.as_bytes())?;
    man.render_version_section(out)
}

/// What each exit status means, for the man page.
const EXIT_STATUSES: &[(u8, &str)] = &[
    (
        0,
        "every table was written (check: every file matches its manifest)",
    ),
    (
        1,
        "an error, on one line of standard error that says what to do; no manifest.json is written",
    ),
    (2, "the options could not be parsed"),
    (
        130,
        "stopped by Ctrl-C or SIGTERM; unfinished files are removed",
    ),
    (
        141,
        "the reader of standard output went away (fbunload -o - | head), as for a death by SIGPIPE",
    ),
];

/// Text as roff prints it: backslashes and hyphens escaped, and no line
/// starting with a control character.
fn roff_text(text: &str) -> String {
    text.replace('\\', "\\e")
        .replace('-', "\\-")
        .lines()
        .map(|line| {
            if line.starts_with(['.', '\'']) {
                format!("\\&{line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compress {
    Gzip,
    Zstd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ParquetCompression {
    Zstd,
    Snappy,
    Gzip,
    None,
}

impl From<ParquetCompression> for fbunload::format::columnar::ParquetCompression {
    fn from(c: ParquetCompression) -> Self {
        match c {
            ParquetCompression::Zstd => Self::Zstd,
            ParquetCompression::Snappy => Self::Snappy,
            ParquetCompression::Gzip => Self::Gzip,
            ParquetCompression::None => Self::None,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Binary {
    Hex,
    Base64,
}

impl From<Binary> for fbunload::format::csv::BinaryEncoding {
    fn from(b: Binary) -> Self {
        match b {
            Binary::Hex => Self::Hex,
            Binary::Base64 => Self::Base64,
        }
    }
}

impl Args {
    /// Parses a command line (program name first) as clap's `parse_from`
    /// does, remembering which options were typed.
    /// The command with `-h`'s short page: only [`SHORT_HELP`]'s options,
    /// each in a line; `--help` keeps every option's whole text.
    pub fn command_with_short_help() -> clap::Command {
        let mut command = Args::command();
        let ids: Vec<String> = command
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        for id in ids {
            let short = SHORT_HELP.iter().find(|(shown, _)| *shown == id);
            command = command.mut_arg(id, |arg| match short {
                None => arg.hide_short_help(true),
                Some((_, "")) => arg,
                Some((_, line)) => {
                    let whole = arg.get_long_help().or(arg.get_help()).cloned();
                    let arg = arg.help(*line);
                    match whole {
                        Some(whole) => arg.long_help(whole),
                        None => arg,
                    }
                }
            });
        }
        for (name, line) in SHORT_COMMANDS {
            command = command.mut_subcommand(*name, |sub| {
                let whole = sub.get_long_about().or(sub.get_about()).cloned();
                let sub = sub.about(*line);
                match whole {
                    Some(whole) => sub.long_about(whole),
                    None => sub,
                }
            });
        }
        command
    }

    pub fn try_parse_from_argv<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches: ArgMatches = Args::command_with_short_help().try_get_matches_from(argv)?;
        let mut args = Args::from_arg_matches(&matches)?;
        args.typed = matches
            .ids()
            .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
        let mut query_options = Vec::new();
        for (id, option) in [
            ("query", QueryOption::Query),
            ("name", QueryOption::Name),
            ("split_by", QueryOption::SplitBy),
        ] {
            let values = matches.get_many::<String>(id).into_iter().flatten();
            let indices = matches.indices_of(id).into_iter().flatten();
            query_options.extend(indices.zip(values).map(|(i, v)| (i, option, v.clone())));
        }
        query_options.sort_by_key(|(index, _, _)| *index);
        args.query_options = query_options
            .into_iter()
            .map(|(_, option, value)| (option, value))
            .collect();
        Ok(args)
    }

    /// The queries asked for: each --query with the --name and --split-by
    /// typed after it, before the next --query.
    pub fn queries(&self) -> Result<Vec<fbunload::QuerySpec>, String> {
        let mut queries: Vec<fbunload::QuerySpec> = Vec::new();
        for (option, value) in &self.query_options {
            let shown = fbunload::printable(value);
            let current = queries.last_mut();
            match (option, current) {
                (QueryOption::Query, _) => queries.push(fbunload::QuerySpec {
                    name: String::new(),
                    sql: value.clone(),
                    split_by: None,
                }),
                (QueryOption::Name, Some(q)) if q.name.is_empty() => q.name = value.clone(),
                (QueryOption::SplitBy, Some(q)) if q.split_by.is_none() => {
                    q.split_by = Some(value.clone())
                }
                (QueryOption::Name, Some(_)) => {
                    return Err(format!(
                        "--name {shown}: the --query before it has a name already; write \
                         --query SQL --name NAME for each query"
                    ))
                }
                (QueryOption::SplitBy, Some(_)) => {
                    return Err(format!(
                        "--split-by {shown}: the --query before it has a --split-by already"
                    ))
                }
                (QueryOption::Name | QueryOption::SplitBy, None) => {
                    let flag = if *option == QueryOption::Name {
                        "--name"
                    } else {
                        "--split-by"
                    };
                    return Err(format!(
                        "{flag} {shown} comes before any --query; it belongs to the --query \
                         typed before it: --query SQL --name NAME"
                    ));
                }
            }
        }
        if let Some(unnamed) = queries.iter().find(|q| q.name.is_empty()) {
            let sql = fbunload::printable(&unnamed.sql);
            let shown: String = sql.chars().take(40).collect();
            let more = if sql.chars().count() > 40 { "..." } else { "" };
            return Err(format!(
                "--query '{shown}{more}' has no --name; give each --query a --name after it \
                 (its file is NAME.csv)"
            ));
        }
        Ok(queries)
    }

    /// Whether the option with this clap id was typed (not a default).
    pub(crate) fn typed(&self, id: &str) -> bool {
        self.typed.iter().any(|t| t == id)
    }

    /// The output options typed: a format refuses only options given to
    /// it, so a default is `None`.
    pub fn output_options(&self) -> fbunload::OutputOptions {
        fbunload::OutputOptions {
            format: self.format.into(),
            header: if self.no_header {
                Some(false)
            } else {
                self.header.then_some(true)
            },
            delimiter: self.typed("delimiter").then(|| self.delimiter.clone()),
            null: self.typed("null").then(|| self.null.clone()),
            crlf: self.crlf,
            binary: self.typed("binary").then(|| self.binary.into()),
            compress: self.compress.map(|c| match c {
                Compress::Gzip => fbunload::format::Compression::Gzip,
                Compress::Zstd => fbunload::format::Compression::Zstd,
            }),
            split: self.split,
            row_group_rows: self.row_group_rows.map(|n| n as usize),
            compression: self.typed("compression").then(|| self.compression.into()),
            decimal256: self.decimal256,
        }
    }

    /// The PostgreSQL database `-o postgresql://...` loads into.
    pub fn pg_uri(&self) -> Option<&str> {
        self.output
            .as_deref()
            .and_then(|p| p.to_str())
            .filter(|o| fbunload::postgres::is_postgres_uri(o))
    }

    /// Whether `-o -` sends the table to standard output.
    pub fn to_stdout(&self) -> bool {
        self.output.as_deref() == Some(Path::new("-"))
    }

    /// Where an unload writes. Required: a run that quietly filled the
    /// current directory with a dozen files surprised people.
    pub fn output_dir(&self) -> Result<&Path, String> {
        self.output.as_deref().ok_or_else(|| {
            "say where the files go: -o DIR (made if needed; one file per table, schema.sql and \
             manifest.json go there) or -o - to write one table to standard output"
                .into()
        })
    }

    /// Where tables are cut into parts (`--max-rows`, `--max-bytes`), or
    /// the one line that refuses the values.
    pub fn part_limits(&self) -> Result<PartLimits, String> {
        let limits = PartLimits {
            rows: self.max_rows.as_deref().map(parse_rows).transpose()?,
            bytes: self.max_bytes.as_deref().map(parse_size).transpose()?,
        };
        if limits.splits() && self.to_stdout() {
            return Err(
                "--max-rows and --max-bytes cut tables into files; -o - writes one \
                 stream: use an output directory"
                    .into(),
            );
        }
        if limits.splits() && self.split {
            return Err(
                "--split writes a directory of parts of its own; --max-rows and \
                 --max-bytes write numbered files beside each other: use one or the other"
                    .into(),
            );
        }
        Ok(limits)
    }

    pub fn parallel(&self) -> usize {
        self.parallel
            .map(|n| n as usize)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// `--stall-timeout`: seconds, bounded as the library bounds them.
fn stall_timeout_seconds(text: &str) -> Result<u64, String> {
    let seconds = text
        .parse::<u64>()
        .map_err(|_| format!("{text:?}: not a number of seconds"))?;
    fbunload::stall_timeout_from_secs(seconds)?;
    Ok(seconds)
}

/// `--max-rows`: a whole number of rows, at least 1.
fn parse_rows(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("--max-rows 0: a part holds one row at least".into()),
        Ok(rows) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(rows),
        _ => Err(format!(
            "--max-rows {text:?}: not a number of rows; write a whole number, e.g. 1000000"
        )),
    }
}

/// `--max-bytes`: bytes, with an optional unit: `K`, `M`, `G`, `T` (also
/// `KB`...) are powers of 1000, as the summary's MB; `KiB`, `MiB`, `GiB`,
/// `TiB` powers of 1024; case does not matter. A fraction is taken to
/// the byte below: `1.5G` is 1,500,000,000.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let refuse = || {
        format!(
            "--max-bytes {text:?}: not a size; write bytes, or a number with K, M, G or T \
             (powers of 1000) or KiB, MiB, GiB or TiB (powers of 1024), e.g. 500M, 2G, 1.5GiB"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_bytes: u128 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(refuse()),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) || fraction.len() > 18 {
        return Err(refuse());
    }
    let whole: u128 = whole.parse().map_err(|_| refuse())?;
    let fraction_bytes = match fraction {
        "" => 0,
        f => f.parse::<u128>().map_err(|_| refuse())? * unit_bytes / 10u128.pow(f.len() as u32),
    };
    let bytes = whole
        .checked_mul(unit_bytes)
        .and_then(|b| b.checked_add(fraction_bytes))
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| format!("--max-bytes {text:?}: too large"))?;
    if bytes == 0 {
        return Err(format!(
            "--max-bytes {text:?}: a part holds one byte at least"
        ));
    }
    Ok(bytes)
}

/// `--every`: a number with `ms`, `s`, `m` or `h`, or bare seconds.
fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?}: give a number and a unit, e.g. 10s, 5m, 500ms"))?;
    let seconds = match unit.trim() {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        other => return Err(format!("unit {other:?}: use ms, s, m or h")),
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("{text:?}: give an interval above zero"));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn intervals_take_units_and_refuse_nonsense() {
        use std::time::Duration;
        assert_eq!(parse_interval("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_interval("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_interval("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("0.2"), Ok(Duration::from_millis(200)));
        for bad in ["", "0", "5 weeks", "-1s", "s", "1e9999"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_take_decimal_and_binary_units() {
        for (text, bytes) in [
            ("1", 1),
            ("500M", 500_000_000),
            ("500MB", 500_000_000),
            ("2G", 2_000_000_000),
            ("2g", 2_000_000_000),
            ("1.5G", 1_500_000_000),
            ("64K", 64_000),
            ("1T", 1_000_000_000_000),
            ("512MiB", 512 << 20),
            ("1.5GiB", 3 << 29),
            ("2kib", 2048),
            ("100 MB", 100_000_000),
            ("7B", 7),
            ("0.5K", 500),
            ("1.0000001K", 1000),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in [
            "", "M", "abc", "-1", "1.2.3", "1X", "1 G B", ".5", "0", "0M", "0.0001", "1e9",
        ] {
            let err = parse_size(bad).unwrap_err();
            assert!(err.starts_with("--max-bytes "), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
        assert!(parse_size("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn rows_are_a_whole_number_from_one() {
        assert_eq!(parse_rows("1"), Ok(1));
        assert_eq!(parse_rows("1000000"), Ok(1_000_000));
        for bad in ["0", "", "-5", "+5", "1e6", "1M", "1.5", "x"] {
            let err = parse_rows(bad).unwrap_err();
            assert!(err.starts_with("--max-rows "), "{bad}: {err}");
        }
    }

    #[test]
    fn parts_are_refused_for_standard_output_and_with_split() {
        let limits = |extra: &[&str]| parse(extra).unwrap().part_limits();
        assert_eq!(limits(&[]), Ok(PartLimits::default()));
        assert_eq!(
            limits(&["--max-rows", "10", "--max-bytes", "1K"]),
            Ok(PartLimits {
                rows: Some(10),
                bytes: Some(1000)
            })
        );
        assert!(limits(&["--max-rows", "10", "-o", "-"])
            .unwrap_err()
            .contains("-o - writes one stream"));
        assert!(limits(&["-f", "parquet", "--split", "--max-bytes", "1G"])
            .unwrap_err()
            .contains("use one or the other"));
    }

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let mut argv = vec!["fbunload", "-d", "x.fdb"];
        argv.extend_from_slice(extra);
        Args::try_parse_from_argv(argv)
    }

    #[test]
    fn options_of_other_formats_are_refused_by_name() {
        let refused = |extra: &[&str]| parse(extra).unwrap().output_options().misplaced();
        assert_eq!(
            refused(&["-f", "parquet", "--header"]).as_deref(),
            Some("--header is for --format csv or tsv, not parquet")
        );
        assert_eq!(
            refused(&["-f", "jsonl", "--binary", "base64", "--null", "x"]).as_deref(),
            Some("--null is for --format csv or tsv, not jsonl")
        );
        assert_eq!(
            refused(&["-f", "tsv", "--delimiter", ";"]).as_deref(),
            Some("--delimiter is for --format csv, not tsv; tsv always uses a tab")
        );
        assert_eq!(
            refused(&["--compression", "zstd"]).as_deref(),
            Some(
                "--compression is for --format parquet, not csv; csv, tsv and jsonl files are \
                 compressed whole with --compress"
            )
        );
        assert_eq!(
            refused(&["-f", "arrow", "--binary", "hex"]).as_deref(),
            Some("--binary is for --format csv, tsv or jsonl, not arrow")
        );
        // Defaults are not typed options; options of the format are fine.
        assert_eq!(refused(&["-f", "parquet"]), None);
        assert_eq!(refused(&["--header", "--delimiter", "tab", "--crlf"]), None);
        assert_eq!(
            refused(&["-f", "jsonl", "--no-header"]).as_deref(),
            Some("--no-header is for --format csv or tsv, not jsonl")
        );
        assert_eq!(refused(&["-f", "parquet", "--split", "--decimal256"]), None);
    }

    #[test]
    fn dash_h_is_one_short_page_and_dash_dash_help_the_whole() {
        let mut command = Args::command_with_short_help();
        let short = command.render_help().to_string();
        let long = command.render_long_help().to_string();
        assert!(short.lines().count() <= 40, "{short}");
        for flag in [
            "--database",
            "--tables",
            "--output",
            "--format",
            "--parallel",
            "--help",
        ] {
            assert!(short.contains(flag), "{flag}: {short}");
        }
        let words = short.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("fbunload --help shows every option"),
            "{short}"
        );
        assert!(
            !short.contains("--since <DIR>") && !short.contains("--no-header"),
            "{short}"
        );
        for flag in [
            "--since",
            "--no-header",
            "--max-bytes",
            "--wire-crypt",
            "Examples:",
        ] {
            assert!(long.contains(flag), "{flag}");
        }
        assert!(!long.contains("That is the short page"));
    }

    #[test]
    fn a_header_is_the_default_and_the_last_of_header_and_no_header_counts() {
        let header = |extra: &[&str]| parse(extra).unwrap().output_options().header;
        assert_eq!(header(&[]), None);
        assert_eq!(header(&["--header"]), Some(true));
        assert_eq!(header(&["--no-header"]), Some(false));
        assert_eq!(header(&["--no-header", "--header"]), Some(true));
        assert_eq!(header(&["--header", "--no-header"]), Some(false));
    }

    #[test]
    fn check_is_a_subcommand_and_unloads_keep_their_flags() {
        let check = Args::try_parse_from_argv(["fbunload", "check", "out"]).unwrap();
        assert!(
            matches!(check.command, Some(Command::Check { dir, finish: false }) if dir == Path::new("out"))
        );
        let unload = parse(&["-o", "check", "--overwrite"]).unwrap();
        assert!(unload.command.is_none() && unload.overwrite);
        assert_eq!(unload.output_dir(), Ok(Path::new("check")));
        assert!(parse(&["--plan"]).unwrap().output_dir().is_err());
        assert!(Args::try_parse_from_argv(["fbunload", "-d", "x.fdb", "check", "out"]).is_err());
        assert!(Args::try_parse_from_argv(["fbunload", "check"]).is_err());
    }

    #[test]
    fn each_query_takes_the_name_and_split_typed_after_it() {
        let args = parse(&[
            "--query",
            "SELECT 1 FROM T",
            "-j",
            "2",
            "--name",
            "ONE",
            "--query",
            "SELECT 2 FROM U",
            "--split-by",
            "U",
            "--name",
            "TWO",
        ])
        .unwrap();
        let queries = args.queries().unwrap();
        let pairs: Vec<_> = queries
            .iter()
            .map(|q| (q.name.as_str(), q.sql.as_str(), q.split_by.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("ONE", "SELECT 1 FROM T", None),
                ("TWO", "SELECT 2 FROM U", Some("U"))
            ]
        );
        for (argv, why) in [
            (vec!["--query", "SELECT 1 FROM T"], "has no --name"),
            (
                vec!["--name", "X", "--query", "SELECT 1 FROM T"],
                "comes before any --query",
            ),
            (
                vec!["--query", "S", "--name", "X", "--name", "Y"],
                "has a name already",
            ),
            (
                vec!["--split-by", "T", "--query", "S", "--name", "X"],
                "--split-by T comes before",
            ),
            (
                vec!["--query", "S", "--name", "X", "--query", "S2"],
                "--query 'S2' has no --name",
            ),
        ] {
            let err = parse(&argv).unwrap().queries().unwrap_err();
            assert!(err.contains(why), "{argv:?}: {err}");
        }
        assert_eq!(parse(&["--views"]).unwrap().views.as_deref(), Some("%"));
        assert_eq!(
            parse(&["--views", "V_%"]).unwrap().views.as_deref(),
            Some("V_%")
        );
        assert_eq!(parse(&[]).unwrap().views, None);
    }

    #[test]
    fn parallel_zero_is_rejected() {
        assert!(parse(&["--parallel", "0"]).is_err());
        assert_eq!(parse(&["-j", "3"]).unwrap().parallel(), 3);
    }

    #[test]
    fn delimiters() {
        let format = |d: &str| {
            parse(&["--delimiter", d])
                .unwrap()
                .output_options()
                .to_format()
        };
        assert!(format("tab").is_ok() && format(";").is_ok());
        assert!(format("\"").is_err() && format(";;").is_err());
        // A tab given to tsv is still a delimiter typed for the wrong format.
        let tsv = parse(&["-f", "tsv", "--delimiter", "tab"]).unwrap();
        assert!(tsv.output_options().to_format().is_err());
    }
}
