//! `fbunload`: the command line. Parsing, the progress display and the
//! summary live here; everything else is in the library crates, so this
//! file stays a thin layer that turns flags into an `UnloadRequest`.

mod args;
mod progress;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use fbunload_client::ConnectOptions;
use fbunload_decode::{BatchLimits, TextDecoder};
use fbunload_exec::{ExecError, Summary, UnloadRequest};
use fbunload_plan::{PlanOptions, TableFilter};
use fbunload_sink::csv::{CsvFormat, CsvOptions};

use args::Args;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fbunload: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let text = TextDecoder::for_charset(&args.charset).ok_or_else(|| {
        format!(
            "--charset {}: unknown character set; use a Firebird name such as UTF8, WIN1252 or ISO8859_1",
            args.charset
        )
    })?;
    let client = fbunload_exec::load_client(args.client_lib.as_deref()).map_err(|e| e.to_string())?;
    let format = CsvFormat::new(CsvOptions {
        delimiter: args.delimiter_byte()?,
        header: args.header,
        null: args.null.clone(),
        binary: args.binary.into(),
        crlf: args.crlf,
    });
    let request = UnloadRequest {
        client: client.clone(),
        connect: ConnectOptions {
            database: args.database.clone(),
            user: args.user.clone(),
            password: args.password.clone(),
            role: args.role.clone(),
            charset: args.charset.to_ascii_uppercase(),
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
        output_dir: args.output.clone(),
        format: Arc::new(format),
        text,
        memory_budget: args.memory_mb.saturating_mul(1 << 20),
        batch: BatchLimits::default(),
        fetch_only: args.fetch_only,
    };

    if args.plan {
        let (plan, start) = fbunload_exec::plan_only(&request).map_err(describe)?;
        println!("{plan}");
        println!(
            "server {}, snapshot {}, {} workers, client {}",
            start.server_version,
            start
                .snapshot_number
                .map_or("not shared (Firebird < 4)".to_string(), |n| n.to_string()),
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

fn describe(err: ExecError) -> String {
    err.to_string()
}

fn print_summary(summary: &Summary) {
    let secs = summary.elapsed.as_secs_f64();
    let width = summary.tables.iter().map(|t| t.name.len()).max().unwrap_or(5).max(5);
    eprintln!("{:width$}  {:>12}  {:>10}", "table", "rows", "MB");
    for t in &summary.tables {
        eprintln!("{:width$}  {:>12}  {:>10.1}", t.name, t.rows, t.bytes as f64 / 1e6);
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
        summary
            .start
            .snapshot_number
            .map_or("(one transaction, Firebird < 4)".to_string(), |n| n.to_string()),
    );
}
