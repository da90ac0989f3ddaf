//! `fbunload-gen`: the command line over [`fbunload_gen::generate`]. Creates
//! a new Firebird database on the embedded engine and fills it with
//! deterministic TPC-C-like and edge-case tables, printing rows and seconds
//! per table.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use fbunload_client::Client;
use fbunload_gen::{generate_with, parse_table_list, GenOptions};

#[derive(Parser, Debug)]
#[command(
    name = "fbunload-gen",
    version,
    about = "Create a deterministic Firebird test database for fbunload",
    after_help = "Tables: WAREHOUSE, DISTRICT, CUSTOMER, ITEM, STOCK, ORDERS, ORDER_LINE, \
                  ALL_TYPES, MIXED, EMPTY_TABLE, ARRAY_TYPES; and, only when named, BIG_BLOB (two blobs of \
                  --blob-mb MiB, for memory measurements), BLOB_HEAVY (--blob-rows rows, a text \
                  and an incompressible binary blob each, --blob-total-mb MiB in all) and WIDE \
                  (--wide-rows rows of --wide-columns columns of mixed types, NULLs sprinkled). The database is created as SYSDBA/masterkey."
)]
struct Args {
    /// The database file to create (must not exist unless --force).
    #[arg(long, value_name = "PATH")]
    database: PathBuf,
    /// TPC-C scale: 10 districts, 30,000 customers and orders, ~300,000
    /// order lines and ITEMS stock rows per warehouse.
    #[arg(long, value_name = "W", default_value_t = 1)]
    warehouses: u32,
    /// Rows of ITEM.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    items: u32,
    /// Comma-separated tables to create, or ALL (the default, unless
    /// --many-tables is given: then none but those).
    #[arg(long, value_name = "LIST")]
    tables: Option<String>,
    /// Also create N ERP-like tables ERP_00001.. of mixed sizes: most of a
    /// few rows, a few holding most of --many-rows (a Zipf law).
    #[arg(long, value_name = "N", default_value_t = 0)]
    many_tables: usize,
    /// About how many rows the --many-tables tables hold in all.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    many_rows: u64,
    /// Create the database on this Firebird server (HOST or HOST/PORT),
    /// at the path --database names there, as SYSDBA with the password in
    /// ISC_PASSWORD (default masterkey); give --client-lib a client that
    /// speaks to it.
    #[arg(long, value_name = "HOST[/PORT]")]
    server: Option<String>,
    /// Database page size: 4096, 8192, 16384 or 32768.
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    page_size: u32,
    /// Delete an existing file first.
    #[arg(long)]
    force: bool,
    /// Add what an application keeps in the database to the TPC-C tables:
    /// foreign keys, a key trigger and its generator, a domain with a
    /// CHECK, a computed column, a view and a selectable procedure (what
    /// `fbunload sample` makes).
    #[arg(long)]
    application: bool,
    /// Rows per generated statement and transaction.
    #[arg(long, value_name = "N", default_value_t = 100_000, hide = true)]
    chunk_rows: u64,
    /// BIG_BLOB: the size of each of its two big blobs, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 100)]
    blob_mb: u32,
    /// BLOB_HEAVY: its rows.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    blob_rows: u64,
    /// BLOB_HEAVY: the size of all its blobs together, in MiB (half text,
    /// half binary).
    #[arg(long, value_name = "MIB", default_value_t = 2048)]
    blob_total_mb: u64,
    /// WIDE: its columns, the key ID included (INTEGER, BIGINT,
    /// NUMERIC(18,4), DOUBLE PRECISION, VARCHAR(40), CHAR(10), DATE,
    /// TIMESTAMP and BOOLEAN in turn).
    #[arg(long, value_name = "N", default_value_t = 500)]
    wide_columns: u32,
    /// WIDE: its rows.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    wide_rows: u64,
    /// The Firebird client library (default: the embedded engine of the
    /// firebird-embedded Python package, or FIREBIRD, or the system's).
    #[arg(long, value_name = "PATH")]
    client_lib: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let tables = match args.tables.as_deref() {
        None if args.many_tables > 0 => Ok(Vec::new()),
        list => parse_table_list(list.unwrap_or("ALL")),
    };
    let tables = match tables {
        Ok(tables) => tables,
        Err(e) => {
            eprintln!("fbunload-gen: --tables: {e}");
            return ExitCode::from(2);
        }
    };
    let client = match Client::load(args.client_lib.as_deref()) {
        Ok(client) => client,
        Err(e) => {
            eprintln!("fbunload-gen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = GenOptions {
        database: args.database,
        warehouses: args.warehouses,
        items: args.items,
        tables,
        page_size: args.page_size,
        force: args.force,
        chunk_rows: args.chunk_rows,
        blob_mb: args.blob_mb,
        blob_rows: args.blob_rows,
        blob_total_mb: args.blob_total_mb,
        wide_columns: args.wide_columns,
        wide_rows: args.wide_rows,
        many_tables: args.many_tables,
        many_rows: args.many_rows,
        password: match &args.server {
            Some(_) => std::env::var("ISC_PASSWORD").unwrap_or_else(|_| "masterkey".into()),
            None => fbunload_gen::PASSWORD.into(),
        },
        server: args.server,
        application: args.application,
    };
    let result = generate_with(&client, &opts, |t| {
        let rate = if t.seconds > 0.0 {
            format!("{:>10.0} rows/s", t.rows as f64 / t.seconds)
        } else {
            String::new()
        };
        println!(
            "{:<12} {:>10} rows {:>8.2} s {rate}",
            t.table.cli_name(),
            t.rows,
            t.seconds
        );
    });
    match result {
        Ok(report) => {
            if let Some((tables, rows, seconds)) = report.many {
                println!("{tables} ERP tables, {rows} rows, {seconds:.2} s");
            }
            let rows: u64 =
                report.tables.iter().map(|t| t.rows).sum::<u64>() + report.many.map_or(0, |m| m.1);
            println!(
                "{} rows in {:.2} s -> {}",
                rows,
                report.seconds,
                report.database.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fbunload-gen: {e}");
            ExitCode::FAILURE
        }
    }
}
