//! The progress display: one line on stderr, only when it is a terminal.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use fbunload_exec::{Progress, RunStart, TableSummary};
use fbunload_plan::Plan;
use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Display {
    bar: ProgressBar,
    rows: AtomicU64,
    bytes: AtomicU64,
    tables_done: AtomicUsize,
    tables: AtomicUsize,
}

impl Display {
    pub fn new(quiet: bool) -> Self {
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            // indicatif hides itself when stderr is not a terminal.
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}").unwrap());
        bar.enable_steady_tick(Duration::from_millis(200));
        Display {
            bar,
            rows: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            tables_done: AtomicUsize::new(0),
            tables: AtomicUsize::new(0),
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn refresh(&self) {
        let rows = self.rows.load(Ordering::Relaxed);
        let secs = self.bar.elapsed().as_secs_f64().max(1e-3);
        self.bar.set_message(format!(
            "{}/{} tables · {} rows · {} · {:.0} rows/s",
            self.tables_done.load(Ordering::Relaxed),
            self.tables.load(Ordering::Relaxed),
            rows,
            HumanBytes(self.bytes.load(Ordering::Relaxed)),
            rows as f64 / secs
        ));
    }
}

impl Progress for Display {
    fn started(&self, plan: &Plan, start: &RunStart) {
        self.tables.store(plan.tables.len(), Ordering::Relaxed);
        self.bar.println(format!(
            "{} tables in {} units, {} workers, snapshot {}",
            plan.tables.len(),
            plan.units.len(),
            start.workers,
            start.snapshot_number.map_or("-".into(), |n| n.to_string())
        ));
        self.refresh();
    }

    fn rows_written(&self, rows: u64, bytes: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.refresh();
    }

    fn warning(&self, message: &str) {
        self.bar
            .suspend(|| eprintln!("fbunload: warning: {message}"));
    }

    fn table_finished(&self, _table: &TableSummary) {
        self.tables_done.fetch_add(1, Ordering::Relaxed);
        self.refresh();
    }
}
