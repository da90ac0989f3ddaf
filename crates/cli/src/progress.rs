//! The progress display: one line on stderr, only when it is a terminal.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use fbunload::{counted, Plan, Progress, RunStart, Unit};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Display {
    bar: ProgressBar,
    rows: AtomicU64,
    units_done: AtomicUsize,
    units: AtomicUsize,
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
            units_done: AtomicUsize::new(0),
            units: AtomicUsize::new(0),
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
        let units = self.units.load(Ordering::Relaxed).max(1);
        let done = self.units_done.load(Ordering::Relaxed);
        self.bar.set_message(format!(
            "{}/{} tables · {}/{} units ({:.0}%) · {} · {:.0} rows/s",
            self.tables_done.load(Ordering::Relaxed),
            self.tables.load(Ordering::Relaxed),
            done,
            units,
            100.0 * done as f64 / units as f64,
            counted(rows, "row"),
            rows as f64 / secs
        ));
    }
}

impl Progress for Display {
    fn started(&self, plan: &Plan, start: &RunStart) {
        self.tables.store(plan.tables.len(), Ordering::Relaxed);
        self.units.store(plan.units.len(), Ordering::Relaxed);
        self.bar.println(format!(
            "{} in {}, {}, snapshot {}",
            crate::count(plan.tables.len(), "table"),
            crate::count(plan.units.len(), "unit"),
            crate::count(start.workers, "worker"),
            start.snapshot_number.map_or("-".into(), |n| n.to_string())
        ));
        self.refresh();
    }

    fn rows_read(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.refresh();
    }

    fn unit_finished(&self, _unit: &Unit, _rows: u64) {
        self.units_done.fetch_add(1, Ordering::Relaxed);
        self.refresh();
    }

    fn warning(&self, message: &str) {
        self.bar
            .suspend(|| eprintln!("fbunload: warning: {message}"));
    }

    fn table_finished(&self, _table: &str, _rows: u64) {
        self.tables_done.fetch_add(1, Ordering::Relaxed);
        self.refresh();
    }
}
