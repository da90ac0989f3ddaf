//! `fbunload`: the command line. Parsing, the progress display and the
//! summary live here; everything else is the `fbunload` library crate, so
//! this crate stays a thin layer that turns flags into an [`Unload`].
//!
//! It is a library so that two programs can be this command line: the
//! `fbunload` binary ([`run`]) and the Python package's `fbunload` console
//! script ([`run_cancellable`], where Python owns the signals).

mod args;
mod hide_password;
mod progress;
mod wait_watch;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fbunload::{
    counted, printable, BatchLimits, Consistency, Error, Format, Kind, PlanOptions, RunOptions,
    Summary, TypeOptions, Unload,
};

use args::Args;

/// What `fbunload` with no arguments prints.
const FIRST_STEPS: &str = "\
fbunload: say which database to unload and where: fbunload -d DATABASE -o DIR
  fbunload sample shop.fdb      make a database to try it on
  fbunload -d shop.fdb -o out   unload every table of it to out/, as CSV
  fbunload check out            check the files against out/manifest.json
  fbunload --help               every option
";

/// Exit status after Ctrl-C or SIGTERM, as shells report a SIGINT death.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Exit status when the reader of standard output went away, as shells
/// report `cat`'s death by SIGPIPE (128 + 13). Rust ignores SIGPIPE, and
/// so may the Firebird client's sockets, so the write fails with EPIPE
/// instead and fbunload stops quietly with this status.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// How long a run may take to stop after the first signal. Not every
/// wait in the engine can be cancelled: a prepare waiting on a table's
/// metadata lock, which another user's DROP or ALTER holds while it waits
/// on fbunload, ignores `fb_cancel_operation` (seen on Firebird 5).
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// The command line of a process of its own: `argv` is the program's
/// name and its arguments; the result is the exit status. Ctrl-C and
/// SIGTERM stop the run and remove unfinished files (status 130); a run
/// still stopping [`STOP_GRACE`] later, or a second signal, ends the
/// process at once.
pub fn run(argv: Vec<OsString>) -> i32 {
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = cancel.clone();
        let left_behind = what_a_forced_stop_leaves(&argv);
        // Workers see the flag between batches, stop, and remove what is
        // unfinished.
        let _ = ctrlc::set_handler(move || {
            if cancel.swap(true, Ordering::SeqCst) {
                exit_without_cleanup(EXIT_INTERRUPTED);
            }
            std::thread::spawn(move || {
                std::thread::sleep(STOP_GRACE);
                eprintln!(
                    "fbunload: interrupted; the server did not end a wait within {} s, so \
                     fbunload ended without it: {left_behind}",
                    STOP_GRACE.as_secs()
                );
                exit_without_cleanup(EXIT_INTERRUPTED);
            });
        });
    }
    run_cancellable(argv, cancel)
}

/// What a run ended without its own clean-up leaves, for the line printed
/// then: a PostgreSQL load or follow never committed (the connection's
/// end rolls it back), a file run's directory holds unfinished files.
fn what_a_forced_stop_leaves(argv: &[OsString]) -> &'static str {
    let mut args = argv.iter().skip(1).map(|a| a.to_string_lossy());
    let mut to_postgres = false;
    let mut resumable = false;
    while let Some(arg) = args.next() {
        resumable |= arg == "--resumable" || arg == "--resume";
        let output = match arg.as_ref() {
            "-o" | "--output" => args.next().map(|o| o.into_owned()),
            other => other
                .strip_prefix("--output=")
                .or_else(|| other.strip_prefix("-o"))
                .map(str::to_string),
        };
        if output.is_some_and(|o| fbunload::postgres::is_postgres_uri(&o)) {
            to_postgres = true;
        }
    }
    if to_postgres && resumable {
        "the PostgreSQL target is as before; what the load committed of its units stays in \
         its staging schema for the same command with --resume"
    } else if to_postgres {
        "the PostgreSQL target is as before (the server rolls back what was not committed \
         when the connection ends), and the next run into the schema removes what this one \
         left in staging"
    } else {
        "no manifest was written, and the next run into the directory removes the \
         unfinished files"
    }
}

/// Ends the process once a run is over, with `status`. Where only servers
/// were attached, the Firebird client library's exit handlers have nothing
/// left to close, yet its remote provider sleeps 50 ms before closing its
/// (already closed) ports (`PortsCleanup::delay`): they are skipped there.
/// An embedded engine is always shut down by them.
pub fn exit(status: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if fbunload::embedded_engine_may_run() {
        std::process::exit(status)
    }
    exit_without_cleanup(status)
}

/// Ends the process without exit handlers: the Firebird client's wait for
/// the engine's threads, one of which is the stuck wait.
pub fn exit_without_cleanup(status: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe {
        libc::_exit(status)
    }
    #[cfg(windows)]
    // SAFETY: ends this process at once, like _exit: no DLL's detach runs.
    unsafe {
        use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};
        TerminateProcess(GetCurrentProcess(), status as u32);
    }
    #[cfg(not(unix))]
    std::process::exit(status)
}

/// The command line inside a process that handles its own signals (a
/// Python interpreter): it installs no signal handler and stops, as after
/// Ctrl-C, once `cancel` is set. Usage errors, `--help` and `--version`
/// are printed and returned as a status, never by exiting.
pub fn run_cancellable(argv: Vec<OsString>, cancel: Arc<AtomicBool>) -> i32 {
    if argv.len() <= 1 {
        // `fbunload` alone: what to type, and the commands a newcomer needs.
        eprint!("{FIRST_STEPS}");
        return 2;
    }
    let args = match Args::try_parse_from_argv(argv) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    if let Some(password) = &args.password {
        hide_password::hide(password);
    }
    if let Some(args::Command::Follow {
        password: Some(password),
        ..
    }) = &args.command
    {
        hide_password::hide(password);
    }
    hide_password::hide_uri_passwords();
    let done = match (&args.command, args.generate) {
        (Some(args::Command::Check { dir, finish }), _) => check(dir, *finish),
        (
            Some(args::Command::Apply {
                old,
                changes,
                output,
            }),
            _,
        ) => apply(
            old,
            changes,
            output,
            args.memory_mb.saturating_mul(1 << 20),
            &cancel,
        ),
        (
            Some(args::Command::Sample {
                path,
                warehouses,
                items,
                force,
                changes,
                quiet,
                client_lib,
            }),
            _,
        ) => sample(
            &fbunload::sample::SampleOptions {
                database: path.clone(),
                warehouses: *warehouses,
                items: *items,
                force: *force,
            },
            *changes,
            client_lib.as_deref(),
            *quiet,
        ),
        (
            Some(args::Command::Follow {
                database,
                user,
                password,
                journal,
                journal_live,
                output,
                since,
                every,
                format,
                from,
                progress,
                pg_schema,
                until_idle,
                memory_mb,
                client_lib,
            }),
            _,
        ) => follow(
            format.as_deref(),
            progress.is_some(),
            &fbunload::follow::FollowOptions {
                database: database.clone(),
                user: user.clone(),
                password: password.clone(),
                client_library: client_lib.clone(),
                archive: journal.clone(),
                live: journal_live.clone(),
                target: output.clone(),
                schema: pg_schema.clone(),
                until_idle: until_idle.map(std::time::Duration::from_secs_f64),
                from: from.clone(),
                memory_budget: memory_mb.saturating_mul(1 << 20),
                since: since.clone(),
                every: *every,
            },
            &cancel,
        ),
        (None, Some(what)) => generate(what),
        (None, None) => execute(&args, cancel),
    };
    // An unload's failure under --progress json ends its events.
    let json = args.progress == args::ProgressMode::Json
        && !args.quiet
        && args.command.is_none()
        && args.generate.is_none();
    match done {
        Ok(()) => 0,
        Err(Failure::Error(message, kind)) if json => {
            // One JSON object per line to the end, for what reads them.
            progress::error_event(&message, kind, 1);
            1
        }
        Err(Failure::Interrupted(message)) if json => {
            progress::error_event(&message, "interrupted", EXIT_INTERRUPTED);
            EXIT_INTERRUPTED
        }
        Err(Failure::Interrupted(message)) => {
            eprintln!("fbunload: {message}");
            EXIT_INTERRUPTED
        }
        Err(Failure::Error(message, _)) => {
            eprintln!("fbunload: error: {message}");
            1
        }
        Err(Failure::BrokenPipe) => EXIT_BROKEN_PIPE,
    }
}

enum Failure {
    /// The message, and its kind ([`fbunload::Error::kind`]'s words).
    Error(String, &'static str),
    Interrupted(String),
    /// Standard output's reader went away: nothing to print.
    BrokenPipe,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message, "usage")
    }
}

fn describe(err: Error) -> Failure {
    match err {
        Error::Interrupted | Error::InterruptedResumable { .. } => {
            Failure::Interrupted(err.to_string())
        }
        other if other.is_broken_pipe() => Failure::BrokenPipe,
        other => Failure::Error(other.to_string(), other.kind()),
    }
}

/// Prints to standard output; println! would panic on a closed pipe.
fn print_out(text: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{text}").map_err(stdout_failure)
}

fn stdout_failure(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::BrokenPipe
    } else {
        Failure::Error(format!("writing standard output: {e}"), "output")
    }
}

/// `--generate`: a completion script or the man page on standard output.
fn generate(what: args::Generate) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    what.write(&mut out)
        .and_then(|()| out.flush())
        .map_err(stdout_failure)
}

/// `fbunload check [--finish] DIR`: each difference on its own line on
/// standard output, then a failure; or one line saying that everything
/// matches.
fn check(dir: &std::path::Path, finish: bool) -> Result<(), Failure> {
    // `check out/manifest.json` names the directory by its manifest.
    let dir = match dir.parent() {
        Some(parent)
            if dir.file_name() == Some(fbunload::MANIFEST_NAME.as_ref()) && dir.is_file() =>
        {
            if parent.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                parent
            }
        }
        _ => dir,
    };
    if finish && fbunload::finish_interrupted_switch(dir).map_err(describe)? {
        eprintln!(
            "fbunload: an fbunload run was stopped while it moved its complete files in; that \
             move is now finished, and the directory holds that run"
        );
    }
    let report = fbunload::check_directory(dir).map_err(describe)?;
    for note in &report.notes {
        eprintln!("fbunload: {note}");
    }
    for difference in &report.differences {
        print_out(format_args!("{difference}"))?;
    }
    if report.matches() {
        let verb = if report.files == 1 {
            "matches"
        } else {
            "match"
        };
        print_out(format_args!(
            "{} {verb} the manifest",
            count(report.files, "file")
        ))?;
        return Ok(());
    }
    Err(Failure::Error(
        format!(
            "check failed: {} from {} ({} checked)",
            count(report.differences.len(), "difference"),
            dir.join(fbunload::MANIFEST_NAME).display(),
            count(report.files, "file")
        ),
        "output",
    ))
}

/// `fbunload apply OLD CHANGES -o STATE`: a line per table.
fn apply(
    old: &std::path::Path,
    changes: &std::path::Path,
    output: &std::path::Path,
    memory_budget: usize,
    cancel: &AtomicBool,
) -> Result<(), Failure> {
    let tables = fbunload::apply::apply_to_directory(old, changes, output, memory_budget, cancel)
        .map_err(describe)?;
    for (name, rows) in &tables {
        print_out(format_args!(
            "{}: {}",
            fbunload::printable(name),
            count(*rows as usize, "row")
        ))?;
    }
    Ok(())
}

/// `fbunload follow`: applies the journal until stopped (SIGINT/SIGTERM:
/// a clean stop, exit 0) or idle; one line of what it applied.
fn follow(
    format: Option<&str>,
    json_progress: bool,
    options: &fbunload::follow::FollowOptions,
    cancel: &AtomicBool,
) -> Result<(), Failure> {
    let stream = options.target == "-";
    if stream != format.is_some() {
        return Err(Failure::Error(
            "follow: -o - streams JSON lines (add --format jsonl); --format is for -o - only"
                .into(),
            "usage",
        ));
    }
    struct JsonProgress;
    impl fbunload::follow::FollowProgress for JsonProgress {
        fn applied(
            &self,
            summary: &fbunload::follow::FollowSummary,
            lag: Option<fbunload::follow::Lag>,
        ) {
            // The journal holds no commit times: the lag is bounded by
            // when the commit's block was written (docs/postgresql.md, "Live").
            let seconds = |d: std::time::Duration| (d.as_secs_f64() * 1000.0).round() / 1000.0;
            eprintln!(
                "{}",
                serde_json::json!({
                    "event": "applied",
                    "transactions": summary.transactions,
                    "changes": summary.changes,
                    "position": summary.position.to_string(),
                    "lag_seconds_at_least": lag.map(|l| seconds(l.at_least)),
                    "lag_seconds_at_most": lag.and_then(|l| l.at_most).map(seconds),
                })
            );
        }

        fn linked(
            &self,
            link: &std::path::Path,
            transactions: u64,
            position: fbunload::follow::Position,
        ) {
            eprintln!(
                "{}",
                serde_json::json!({
                    "event": "link",
                    "path": link.display().to_string(),
                    "transactions": transactions,
                    "position": position.to_string(),
                })
            );
        }
    }
    let progress: &dyn fbunload::follow::FollowProgress =
        if json_progress { &JsonProgress } else { &() };
    let summary = fbunload::follow::follow(options, cancel, progress).map_err(describe)?;
    eprintln!(
        "fbunload: follow applied {} and {} to {}, journal position {}",
        count(summary.transactions as usize, "transaction"),
        count(summary.changes as usize, "row change"),
        if stream {
            "standard output"
        } else if fbunload::postgres::is_postgres_uri(&options.target) {
            options.pg_schema()
        } else {
            &options.target
        },
        summary.position
    );
    Ok(())
}

/// `fbunload sample`: the database, a line per table as it is filled, and
/// the command to try next.
fn sample(
    options: &fbunload::sample::SampleOptions,
    changes: Option<u32>,
    client_lib: Option<&std::path::Path>,
    quiet: bool,
) -> Result<(), Failure> {
    let mut unload = fbunload::Unload::new(options.database.display().to_string());
    if let Some(path) = client_lib {
        unload = unload.client_library(path);
    }
    let client = unload.load_client().map_err(describe)?;
    if let Some(percent) = changes {
        if !options.database.exists() || options.force {
            make_sample(&client, options, quiet)?;
        }
        let done = fbunload::sample::change_sample(&client, &options.database, percent)
            .map_err(|e| Failure::Error(format!("sample --changes: {e}"), "database"))?;
        if !quiet {
            for line in done {
                eprintln!("  {line}");
            }
        }
        return Ok(());
    }
    make_sample(&client, options, quiet)
}

fn make_sample(
    client: &std::sync::Arc<fbunload::sample::Client>,
    options: &fbunload::sample::SampleOptions,
    quiet: bool,
) -> Result<(), Failure> {
    let sample = fbunload::sample::create_sample(client, options, |table| {
        if !quiet {
            eprintln!(
                "  {:<19} {:>12}  {:.1} s",
                table.table.db_name(),
                counted(table.rows, "row"),
                table.seconds
            );
        }
    })
    .map_err(|e| match e {
        fbunload::sample::SampleError::Exists(path) => Failure::from(format!(
            "sample: {} already exists and is not the sample these options make (another \
             database, a sample of an older fbunload, or other --warehouses or --items): use --force to replace it",
            path.display()
        )),
        e => Failure::Error(format!("sample: {e}"), "database"),
    })?;
    let report = sample.report;
    let rows: u64 = report.tables.iter().map(|t| t.rows).sum();
    if !quiet && sample.reused {
        eprintln!(
            "{}: already this sample ({}, {}), kept as it is (--force makes it again). Try:\n  {}",
            report.database.display(),
            count(report.tables.len(), "table"),
            counted(rows, "row"),
            fbunload::sample::sample_command(&options.database, "out")
        );
    } else if !quiet {
        eprintln!(
            "{}: {}, {} in {:.1} s. Try:\n  {}",
            report.database.display(),
            count(report.tables.len(), "table"),
            counted(rows, "row"),
            report.seconds,
            fbunload::sample::sample_command(&options.database, "out")
        );
    }
    Ok(())
}

/// "1 table", "2 tables".
/// `4 workers`, or `4 workers in 2 reader processes`.
pub(crate) fn workers_text(start: &fbunload::RunStart) -> String {
    match start.processes {
        0 => count(start.workers, "worker"),
        1 => format!("{} in 1 reader process", count(start.workers, "worker")),
        n => format!("{} in {n} reader processes", count(start.workers, "worker")),
    }
}

pub(crate) fn count(n: usize, noun: &str) -> String {
    counted(n as u64, noun)
}

/// The output format the flags ask for, checked as the library checks it
/// for every front end.
fn output_format(args: &Args) -> Result<Format, Failure> {
    Ok(args.output_options().to_format()?)
}

fn execute(args: &Args, cancel: Arc<AtomicBool>) -> Result<(), Failure> {
    if args.pg_end_sync {
        return end_sync(args);
    }
    // Checked when parsed.
    let stall_timeout = fbunload::stall_timeout_from_secs(args.stall_timeout)?;
    let _wait_watch =
        wait_watch::WaitWatch::start(Duration::from_secs(args.lock_timeout), stall_timeout);
    let none_text =
        fbunload::none_text_decoder(&args.charset).map_err(|e| format!("--charset {e}"))?;
    let format = output_format(args)?;
    let part_limits = args.part_limits()?;
    // --plan and --fetch-only write nothing: they need no -o.
    if !args.plan && !args.fetch_only {
        args.output_dir()?;
    }
    if args.overwrite && args.to_stdout() {
        return Err(Failure::from(
            "--overwrite is for an output directory; -o - writes to standard output".to_string(),
        ));
    }
    let options = RunOptions {
        parallel: args.parallel(),
        plan: PlanOptions {
            unit_pages: args.unit_pages,
            ..PlanOptions::default()
        },
        types: TypeOptions {
            none_text,
            decimal256: args.decimal256,
        },
        batch: BatchLimits {
            rows: args
                .batch_rows
                .map_or(BatchLimits::default().rows, |r| r as usize),
            ..BatchLimits::default()
        },
        fetch_only: args.fetch_only,
        verify: args.verify,
        cancel,
        max_retries: 3,
        allow_inconsistent: args.allow_inconsistent,
        schema: !args.no_schema,
        stall_timeout,
        // For the JSON start event's estimated rows.
        estimate: args.progress == args::ProgressMode::Json && !args.quiet,
        // Counted from --processes by the Unload below.
        ..RunOptions::default()
    };
    // clap asks for it unless --generate, which never gets here.
    let database = args
        .database
        .clone()
        .ok_or_else(|| Failure::from("-d/--database is required".to_string()))?;
    if args.typed("password")
        && fbunload::is_plain_path(&database)
        && !args.quiet
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
    {
        // Many how-tos give one; say once, to a person, that it is not
        // used (scripts, and stderr read as JSON, get nothing more).
        eprintln!(
            "fbunload: note: {} is a file, opened by the embedded engine, which checks no \
             password: -p is not needed (a server checks it: -d localhost:PATH)",
            printable(&database)
        );
    }
    let mut unload = Unload::new(database)
        .options(options)
        .processes(args.processes)
        .memory_budget(args.memory_mb.saturating_mul(1 << 20))
        .overwrite(args.overwrite)
        .keep_keys(args.keep_keys)
        .resumable(args.resumable)
        .resume(args.resume)
        .pg_drop_others(args.pg_drop_others)
        .pg_grants(args.pg_grants)
        .part_limits(part_limits)
        .wire(args::WireCrypt::wire_options(
            args.wire_crypt,
            args.wire_compression,
        ));
    if let Some(seconds) = args.pg_lock_wait {
        unload = unload.pg_lock_wait(Duration::from_secs(seconds));
    }
    if let Some(percent) = args.pg_fillfactor {
        unload = unload.pg_fillfactor(percent);
    }
    if let Some(since) = &args.since {
        unload = unload.since(since);
    }
    if let Some(journal) = &args.journal {
        unload = unload.journal(journal);
    }
    if let Some(user) = &args.user {
        unload = unload.user(user);
    }
    if let Some(password) = &args.password {
        unload = unload.password(password);
    }
    if let Some(role) = &args.role {
        unload = unload.role(role);
    }
    if let Some(tables) = &args.tables {
        unload = unload.tables(tables);
    }
    if let Some(exclude) = &args.exclude {
        unload = unload.exclude(exclude);
    }
    for columns in &args.columns {
        unload = unload.columns(columns);
    }
    for condition in &args.where_ {
        unload = unload.rows_where(condition);
    }
    if let Some(pattern) = &args.views {
        unload = unload.views(pattern);
    }
    for spec in args.queries()? {
        unload = unload.query_spec(spec);
    }
    if let Some(path) = &args.client_lib {
        unload = unload.client_library(path);
    }
    let client = unload.load_client().map_err(describe)?;

    if args.plan {
        let mut prepared = unload.prepare().map_err(describe)?;
        let estimating = std::time::Instant::now();
        prepared.estimate().map_err(describe)?;
        let estimate_seconds = estimating.elapsed().as_secs_f64();
        if args.progress == args::ProgressMode::Json {
            // For schedulers: the plan as one JSON object on standard output.
            let mut plan =
                progress::plan_json(&prepared.plan, &prepared.start, &client.source.to_string());
            // What the estimates cost, for those who weigh running them.
            plan["estimate_seconds"] = ((estimate_seconds * 1e4).round() / 1e4).into();
            if let Some(uri) = args.pg_uri() {
                let target = unload
                    .plan_postgres(&prepared, uri, args.pg_schema.as_deref())
                    .map_err(describe)?;
                plan["postgresql"] = postgres_plan_json(&target);
            }
            return print_out(format_args!("{plan}"));
        }
        print_out(format_args!("{}", prepared.plan))?;
        if let Some(uri) = args.pg_uri() {
            let target = unload
                .plan_postgres(&prepared, uri, args.pg_schema.as_deref())
                .map_err(describe)?;
            print_out(format_args!("{}", postgres_plan_text(&target)))?;
        }
        print_out(format_args!(
            "server {}, {}, {}, client {}",
            prepared.start.server_version,
            if prepared.start.consistency == Consistency::SnapshotPerReader {
                "no shared snapshot (--allow-inconsistent)"
            } else {
                "the snapshot is taken when the unload starts"
            },
            workers_text(&prepared.start),
            client.source
        ))?;
        return Ok(());
    }

    let output = if args.fetch_only && args.output.is_none() {
        std::path::Path::new(".")
    } else {
        args.output_dir()?
    };
    if args.pg_uri().is_none() {
        let given = [
            ("--pg-schema", args.pg_schema.is_some()),
            ("--pg-lock-wait", args.pg_lock_wait.is_some()),
            ("--pg-drop-others", args.pg_drop_others),
            ("--pg-grants", args.pg_grants),
            ("--pg-fillfactor", args.pg_fillfactor.is_some()),
            ("--pg-verify-only", args.pg_verify_only),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(Failure::Error(
                format!("{flag} is for a PostgreSQL output: -o postgresql://USER@HOST:PORT/DBNAME"),
                "usage",
            ));
        }
    }
    if let Some(uri) = args.pg_uri() {
        fbunload::postgres::refuse_file_options(&args.output_options())?;
        return load_postgres(args, &unload, uri);
    }
    let run = |progress: &dyn fbunload::Progress| {
        if args.to_stdout() {
            unload.to_stdout(format.clone(), progress)
        } else {
            unload.to_directory(output, format.clone(), progress)
        }
        .map_err(describe)
    };
    if args.progress == args::ProgressMode::Json && !args.quiet {
        let events = progress::JsonLines::new();
        let summary = run(&events)?;
        events.summary(&summary);
        return Ok(());
    }
    let display = progress::Display::new(args.quiet);
    let summary = run(&display)?;
    display.finish();
    if !args.quiet {
        eprint!("{}", summary_text(&summary));
    }
    Ok(())
}

/// What `--plan -o postgresql://...` prints of the target.
fn postgres_plan_text(plan: &fbunload::postgres::TargetPlan) -> String {
    let mut text = format!("PostgreSQL: {}\n", plan.run);
    for (table, what) in &plan.tables {
        text += &format!("  {}: {what}\n", printable(table));
    }
    if !plan.replaced.is_empty() {
        let replaced: Vec<String> = plan
            .replaced
            .iter()
            .map(|(r, rows)| format!("{} (~{rows} rows)", printable(r)))
            .collect();
        text += &format!("  --overwrite replaces: {}\n", replaced.join(", "));
    }
    if !plan.tallies.is_empty() {
        let kinds: Vec<String> = plan
            .tallies
            .iter()
            .map(|t| format!("{} {}/{}", t.kind, t.created, t.reported))
            .collect();
        text += &format!(
            "  Firebird's catalog by kind, would be made/reported: {}\n",
            kinds.join(", ")
        );
        for u in &plan.untranslated {
            let table = u
                .table
                .as_deref()
                .map(|t| format!(" of {}", printable(t)))
                .unwrap_or_default();
            text += &format!(
                "  would report {} {}{table}: {}\n",
                u.kind,
                printable(&u.name),
                u.why
            );
        }
    }
    text.trim_end().to_string()
}

/// What `--plan -o postgresql://... --progress json` says of the target:
/// what the text plan says ([`postgres_plan_text`]), as fields.
fn postgres_plan_json(plan: &fbunload::postgres::TargetPlan) -> serde_json::Value {
    let tables: Vec<serde_json::Value> = plan
        .tables
        .iter()
        .map(|(table, what)| {
            let action = if what.starts_with("refused") {
                "refused"
            } else {
                plan.kind
            };
            serde_json::json!({
                "table": table,
                "postgresql": fbunload::postgres::pg_name(table),
                "action": action,
                "detail": what,
            })
        })
        .collect();
    let replaced: Vec<serde_json::Value> = plan
        .replaced
        .iter()
        .map(|(relation, rows)| serde_json::json!({"relation": relation, "estimated_rows": rows}))
        .collect();
    let catalog: Vec<serde_json::Value> = plan
        .tallies
        .iter()
        .map(|t| serde_json::json!({"kind": t.kind, "made": t.created, "reported": t.reported}))
        .collect();
    let reported: Vec<serde_json::Value> = plan
        .untranslated
        .iter()
        .map(|u| {
            serde_json::json!({
                "kind": u.kind,
                "table": u.table,
                "name": u.name,
                "why": u.why,
            })
        })
        .collect();
    serde_json::json!({
        "run": plan.kind,
        "detail": plan.run,
        "tables": tables,
        "overwrite_replaces": replaced,
        "catalog": catalog,
        "reported": reported,
    })
}

/// `--pg-end-sync`: the cut-over, in PostgreSQL only.
fn end_sync(args: &Args) -> Result<(), Failure> {
    let Some(uri) = args.pg_uri() else {
        return Err(Failure::Error(
            "--pg-end-sync needs the PostgreSQL target: -o postgresql://USER@HOST:PORT/DBNAME"
                .into(),
            "usage",
        ));
    };
    let ended = fbunload::postgres::end_sync(uri, args.pg_schema.as_deref()).map_err(describe)?;
    if !args.quiet {
        let schema = args
            .pg_schema
            .as_deref()
            .unwrap_or(fbunload::postgres::DEFAULT_SCHEMA);
        eprintln!(
            "schema {} is no longer kept in sync: fbunload's tables removed ({} recorded); \
             a later fbunload run into it is refused",
            printable(schema),
            count(ended.runs as usize, "run")
        );
        if ended.untranslated > 0 {
            eprintln!(
                "{} had not been translated by fbunload: translate by hand what the \
                 application still needs",
                count(ended.untranslated as usize, "object")
            );
        }
    }
    Ok(())
}

/// `-o postgresql://...`: the run, then what it loaded and what did not
/// translate.
fn load_postgres(args: &Args, unload: &Unload, uri: &str) -> Result<(), Failure> {
    if args.pg_verify_only {
        let verify = |progress: &dyn fbunload::Progress| {
            unload
                .verify_postgres(uri, args.pg_schema.as_deref(), progress)
                .map_err(describe)
        };
        if args.progress == args::ProgressMode::Json && !args.quiet {
            let events = progress::JsonLines::new();
            let summary = verify(&events)?;
            events.summary(&summary);
            return Ok(());
        }
        let display = progress::Display::new(args.quiet);
        let summary = verify(&display)?;
        display.finish();
        if !args.quiet {
            eprintln!(
                "verified: schema {} of {} holds what Firebird holds, every column of {}",
                printable(
                    args.pg_schema
                        .as_deref()
                        .unwrap_or(fbunload::postgres::DEFAULT_SCHEMA)
                ),
                fbunload::postgres::shown_target(uri),
                count(summary.tables.len(), "table")
            );
        }
        return Ok(());
    }
    let run = |progress: &dyn fbunload::Progress| {
        unload
            .to_postgres(uri, args.pg_schema.as_deref(), progress)
            .map_err(describe)
    };
    if args.progress == args::ProgressMode::Json && !args.quiet {
        // Events only: the text below would break the JSON stream.
        let events = progress::JsonLines::new();
        let loaded = run(&events)?;
        events.postgres(&loaded);
        events.summary(&loaded.summary);
        return Ok(());
    }
    let display = progress::Display::new(args.quiet);
    let loaded = run(&display)?;
    display.finish();
    if !args.quiet {
        eprint!("{}", summary_text(&loaded.summary));
        eprintln!(
            "{} schema {} of {}",
            if loaded.synced {
                "synced (only the changes since its last run applied):"
            } else {
                "loaded into"
            },
            printable(&loaded.schema),
            loaded.target
        );
        if let Some(resumed) = &loaded.resumed {
            // Transaction numbers, not snapshot numbers: an embedded
            // engine starts those again when its last attachment closes,
            // so the resume's can be the smaller.
            eprintln!(
                "resumed the stopped load (its snapshot: transaction {}): {} kept (unchanged \
                 since), {} read again at this run's snapshot",
                resumed.first_transaction,
                count(resumed.units_kept as usize, "unit"),
                resumed.units_read_again,
            );
        }
        if !loaded.catalog.is_empty() {
            let kinds: Vec<String> = loaded
                .catalog
                .iter()
                .map(|t| format!("{} {}/{}", t.kind, t.created, t.reported))
                .collect();
            eprintln!(
                "Firebird's catalog by kind, made in PostgreSQL/reported: {}",
                kinds.join(", ")
            );
        }
        if !loaded.untranslated.is_empty() {
            eprintln!(
                "{} not translated (listed with their Firebird source in {}.{}):",
                count(loaded.untranslated.len(), "object"),
                printable(&loaded.schema),
                fbunload::postgres::REPORT_TABLE
            );
            for u in &loaded.untranslated {
                let table = u
                    .table
                    .as_deref()
                    .map(|t| format!(" of {}", printable(t)))
                    .unwrap_or_default();
                eprintln!("  {} {}{table}: {}", u.kind, printable(&u.name), u.why);
            }
        }
    }
    Ok(())
}

fn snapshot_text(start: &fbunload::RunStart) -> String {
    match start.snapshot_number {
        Some(n) => n.to_string(),
        None if start.consistency == Consistency::SnapshotPerReader => {
            "none shared (Firebird < 4, --allow-inconsistent: tables not mutually consistent)"
                .into()
        }
        None => "(one transaction, Firebird < 4)".into(),
    }
}

/// What a `--since` run did with a table, after its line of the summary.
fn change_text(upserts: u64, change: &fbunload::TableChange) -> String {
    match &change.whole_because {
        Some(why) => format!("  read whole: {why}"),
        None => {
            let rechecked = match change.rechecked_units {
                0 => String::new(),
                n => format!(", {} rechecked", count(n as usize, "unit")),
            };
            format!("  changes: +{upserts} -{}{rechecked}", change.deletes)
        }
    }
}

/// The summary printed on stderr after a run.
fn summary_text(summary: &Summary) -> String {
    use std::fmt::Write;
    let mut text = String::new();
    let secs = summary.elapsed.as_secs_f64();
    let width = summary
        .tables
        .iter()
        .map(|t| printable(&t.name).chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(text, "{:width$}  {:>12}  {:>10}", "table", "rows", "MB");
    for t in &summary.tables {
        let kind = match t.kind {
            Kind::Table => String::new(),
            kind => format!("  {}", kind.as_str()),
        };
        let _ = writeln!(
            text,
            "{:width$}  {:>12}  {:>10.1}{kind}{}",
            printable(&t.name),
            t.rows,
            t.bytes as f64 / 1e6,
            t.change
                .as_ref()
                .map(|c| change_text(t.rows, c))
                .unwrap_or_default()
        );
    }
    let mut what = count(
        summary
            .tables
            .iter()
            .filter(|t| t.kind == Kind::Table)
            .count(),
        "table",
    );
    for (kind, one, many) in [
        (Kind::View, "view", "views"),
        (Kind::Query, "query", "queries"),
    ] {
        match summary.tables.iter().filter(|t| t.kind == kind).count() {
            0 => {}
            1 => what += &format!(", 1 {one}"),
            n => what += &format!(", {n} {many}"),
        }
    }
    let _ = writeln!(
        text,
        "{}, {}, {:.1} MB in {:.2} s ({:.0} rows/s, {:.1} MB/s); {}, snapshot {}",
        what,
        counted(summary.rows(), "row"),
        summary.bytes() as f64 / 1e6,
        secs,
        summary.rows() as f64 / secs.max(1e-9),
        summary.bytes() as f64 / 1e6 / secs.max(1e-9),
        workers_text(&summary.start),
        snapshot_text(&summary.start),
    );
    match summary.retries {
        0 => {}
        1 => text += "1 unit was redone after a lost connection\n",
        n => text += &format!("{n} units were redone after a lost connection\n"),
    }
    if summary.verified {
        let whose: Vec<&str> = [
            (Kind::Table, "table's"),
            (Kind::View, "view's"),
            (Kind::Query, "query's"),
        ]
        .into_iter()
        .filter(|(kind, _)| summary.tables.iter().any(|t| t.kind == *kind))
        .map(|(_, whose)| whose)
        .collect();
        let whose = match whose.as_slice() {
            [.., last] if whose.len() > 1 => {
                format!("{} and {last}", whose[..whose.len() - 1].join(", "))
            }
            _ => whose.concat(),
        };
        let _ = writeln!(
            text,
            "verified: every {whose} rows equal COUNT(*) at the same snapshot"
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_stop_speaks_of_the_output_the_run_had() {
        let argv = |args: &[&str]| -> Vec<OsString> {
            std::iter::once("fbunload")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect()
        };
        for pg in [
            argv(&["-d", "x.fdb", "-o", "postgresql://u@h/db"]),
            argv(&["-d", "x.fdb", "--output=postgres://u@h/db"]),
            argv(&[
                "follow",
                "-d",
                "x.fdb",
                "--journal",
                "j",
                "-opostgresql://h/db",
            ]),
        ] {
            assert!(
                what_a_forced_stop_leaves(&pg).contains("PostgreSQL"),
                "{pg:?}"
            );
        }
        let files = what_a_forced_stop_leaves(&argv(&["-d", "x.fdb", "-o", "out"]));
        assert!(files.contains("directory") && !files.contains("PostgreSQL"));
        // A resumable load keeps its staging schema for --resume.
        let kept = what_a_forced_stop_leaves(&argv(&[
            "-d",
            "x.fdb",
            "--resumable",
            "-o",
            "postgresql://u@h/db",
        ]));
        assert!(kept.contains("--resume"), "{kept}");
    }

    #[test]
    fn counts_of_one_are_singular() {
        let summary = Summary {
            start: fbunload::RunStart {
                server_version: "LI-V5.0.3.1683 Firebird 5.0".into(),
                snapshot_number: Some(7),
                snapshot_marks: None,
                workers: 1,
                processes: 0,
                consistency: Consistency::SharedSnapshot,
            },
            tables: vec![fbunload::TableSummary {
                name: "T".into(),
                kind: Kind::Table,
                path: None,
                rows: 1,
                bytes: 2,
                units: 1,
                files: Vec::new(),
                change: None,
            }],
            elapsed: std::time::Duration::from_millis(10),
            verified: false,
            retries: 1,
        };
        let text = summary_text(&summary);
        assert!(text.contains("\n1 table, 1 row, "), "{text}");
        assert!(text.contains("; 1 worker, snapshot 7\n"), "{text}");
        assert!(
            text.contains("\n1 unit was redone after a lost connection\n"),
            "{text}"
        );
        let summary = Summary {
            retries: 2,
            ..summary
        };
        assert!(summary_text(&summary).contains("2 units were redone"));
        // --verify names only the kinds that were there.
        let verified = Summary {
            verified: true,
            ..summary.clone()
        };
        assert!(summary_text(&verified)
            .contains("\nverified: every table's rows equal COUNT(*) at the same snapshot\n"));
        let mut with_query = verified.clone();
        with_query.tables.push(fbunload::TableSummary {
            name: "Q".into(),
            kind: Kind::Query,
            ..verified.tables[0].clone()
        });
        assert!(summary_text(&with_query).contains("verified: every table's and query's rows"));
        with_query.tables[0].kind = Kind::View;
        with_query.tables.push(verified.tables[0].clone());
        assert!(
            summary_text(&with_query).contains("verified: every table's, view's and query's rows")
        );
    }
}
