//! `fbunload`: the command line. Parsing, the progress display and the
//! summary live here; everything else is in the library crates, so this
//! file stays a thin layer that turns flags into an `UnloadRequest`.

mod args;
mod hide_password;
mod progress;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use fbunload_client::ConnectOptions;
use fbunload_decode::{BatchLimits, TextDecoder, TypeOptions};
use fbunload_exec::{ExecError, Summary, UnloadRequest};
use fbunload_plan::{PlanOptions, TableFilter};
use fbunload_sink::columnar::ColumnarFormat;
use fbunload_sink::compress::{Compressed, Compression};
use fbunload_sink::csv::{CsvFormat, CsvOptions};
use fbunload_sink::jsonl::JsonLinesFormat;
use fbunload_sink::StreamFormat;

use args::{Args, Compress, Format};

/// Exit status after Ctrl-C or SIGTERM, as shells report a SIGINT death.
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(password) = &args.password {
        hide_password::hide(password);
    }
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = cancel.clone();
        // Workers see the flag between batches, stop, and remove what is
        // unfinished; a second signal ends the process at once.
        let _ = ctrlc::set_handler(move || {
            if cancel.swap(true, Ordering::SeqCst) {
                std::process::exit(EXIT_INTERRUPTED as i32);
            }
        });
    }
    match run(&args, cancel) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Interrupted(message)) => {
            eprintln!("fbunload: {message}");
            ExitCode::from(EXIT_INTERRUPTED)
        }
        Err(Failure::Error(message)) => {
            eprintln!("fbunload: error: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Error(String),
    Interrupted(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message)
    }
}

fn describe(err: ExecError) -> Failure {
    match err {
        ExecError::Interrupted => Failure::Interrupted(err.to_string()),
        other => Failure::Error(other.to_string()),
    }
}

fn run(args: &Args, cancel: Arc<AtomicBool>) -> Result<(), Failure> {
    let none_text = TextDecoder::for_charset(&args.charset).ok_or_else(|| {
        format!(
            "--charset {}: not a character set fbunload can decode; use a Firebird name such as \
             UTF8, WIN1252 or ISO8859_1",
            args.charset
        )
    })?;
    let client = fbunload_exec::load_client(args.client_lib.as_deref()).map_err(describe)?;
    // Ctrl-C and SIGTERM are ours (see main): without this the embedded
    // engine also reacts to them by cutting every attachment mid-unit.
    client.leave_signals_to_the_application();
    let csv_options = CsvOptions {
        // TSV is CSV with a tab, whatever --delimiter says.
        delimiter: if args.format == Format::Tsv {
            b'\t'
        } else {
            args.delimiter_byte()?
        },
        header: args.header,
        null: args.null.clone(),
        binary: args.binary.into(),
        crlf: args.crlf,
    };
    csv_options.validate()?;
    let format: Arc<dyn StreamFormat> = match args.format {
        Format::Csv => Arc::new(CsvFormat::new(csv_options)),
        Format::Tsv => Arc::new(CsvFormat::tsv(csv_options)),
        Format::Jsonl => Arc::new(JsonLinesFormat::new(args.binary.into())),
        Format::Parquet => Arc::new(ColumnarFormat::Parquet {
            compression: args.compression.into(),
            split: args.split,
        }),
        Format::Arrow => Arc::new(ColumnarFormat::Arrow),
    };
    let format: Arc<dyn StreamFormat> = match (args.compress, args.format) {
        (None, _) => format,
        (Some(_), Format::Parquet | Format::Arrow) => {
            return Err(Failure::Error(
                "--compress is for csv, tsv and jsonl; Parquet compresses its columns itself \
                 (--compression)"
                    .into(),
            ))
        }
        (Some(Compress::Gzip), _) => Arc::new(Compressed::new(format, Compression::Gzip)),
        (Some(Compress::Zstd), _) => Arc::new(Compressed::new(format, Compression::Zstd)),
    };
    if args.split && args.format != Format::Parquet {
        return Err(Failure::Error("--split is for --format parquet".into()));
    }
    // `-o -`: spilled units (and Parquet or Arrow files, which are only
    // complete at the end) go to a private directory.
    let to_stdout = args.output.as_os_str() == "-";
    let staging = if to_stdout {
        Some(
            tempfile::Builder::new()
                .prefix(".fbunload-stdout")
                .tempdir()
                .map_err(|e| format!("cannot make a temporary directory for -o -: {e}"))?,
        )
    } else {
        None
    };
    let request = UnloadRequest {
        client: client.clone(),
        connect: ConnectOptions {
            database: args.database.clone(),
            user: args.user.clone(),
            password: args.password.clone(),
            role: args.role.clone(),
            // fbunload-exec chooses the connection character set itself.
            charset: String::new(),
            no_garbage_collect: false,
        },
        filter: TableFilter {
            include: args.tables.clone(),
            exclude: args.exclude.clone(),
        },
        plan: PlanOptions {
            unit_pages: args.unit_pages,
            ..PlanOptions::default()
        },
        parallel: args.parallel(),
        output_dir: staging
            .as_ref()
            .map_or_else(|| args.output.clone(), |d| d.path().to_path_buf()),
        to_stdout,
        format,
        types: TypeOptions {
            none_text,
            decimal256: args.decimal256,
        },
        memory_budget: args.memory_mb.saturating_mul(1 << 20),
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
    };

    if args.plan {
        let (plan, start) = fbunload_exec::plan_only(&request).map_err(describe)?;
        println!("{plan}");
        println!(
            "server {}, {}, {} workers, client {}",
            start.server_version,
            if start.per_worker_snapshots {
                "no shared snapshot (--allow-inconsistent)"
            } else {
                "the snapshot is taken when the unload starts"
            },
            start.workers,
            client.source
        );
        return Ok(());
    }

    let display = progress::Display::new(args.quiet);
    let summary = fbunload_exec::unload(&request, &display).map_err(describe)?;
    display.finish();
    if !args.quiet {
        print_summary(&summary);
    }
    Ok(())
}

fn snapshot_text(start: &fbunload_exec::RunStart) -> String {
    match start.snapshot_number {
        Some(n) => n.to_string(),
        None if start.per_worker_snapshots => {
            "none shared (Firebird < 4, --allow-inconsistent: tables not mutually consistent)"
                .into()
        }
        None => "(one transaction, Firebird < 4)".into(),
    }
}

fn print_summary(summary: &Summary) {
    let secs = summary.elapsed.as_secs_f64();
    let width = summary
        .tables
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    eprintln!("{:width$}  {:>12}  {:>10}", "table", "rows", "MB");
    for t in &summary.tables {
        eprintln!(
            "{:width$}  {:>12}  {:>10.1}",
            t.name,
            t.rows,
            t.bytes as f64 / 1e6
        );
    }
    eprintln!(
        "{} tables, {} rows, {:.1} MB in {:.2} s ({:.0} rows/s, {:.1} MB/s); {} workers, snapshot {}",
        summary.tables.len(),
        summary.rows(),
        summary.bytes() as f64 / 1e6,
        secs,
        summary.rows() as f64 / secs.max(1e-9),
        summary.bytes() as f64 / 1e6 / secs.max(1e-9),
        summary.start.workers,
        snapshot_text(&summary.start),
    );
    if summary.retries > 0 {
        eprintln!(
            "{} units were redone after a lost connection",
            summary.retries
        );
    }
    if summary.verified {
        eprintln!("verified: every table's rows equal COUNT(*) at the same snapshot");
    }
}
