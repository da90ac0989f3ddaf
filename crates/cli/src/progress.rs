//! Progress on stderr: a line for people (only when stderr is a
//! terminal), or with `--progress json` one JSON object per event, for
//! schedulers and scripts, ending with the run's summary.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fbunload::{counted, Estimate, Plan, Progress, RunStart, Summary, Unit};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

pub struct Display {
    bar: ProgressBar,
    /// Data pages of the units finished: the bar's position.
    pages_done: AtomicU64,
    rows: AtomicU64,
    units_done: AtomicUsize,
    units: AtomicUsize,
    tables_done: AtomicUsize,
    tables: AtomicUsize,
    unit_pages: AtomicU64,
}

/// The progress line before the first unit is done, and after.
const STARTING: &str = "{spinner} [{elapsed_precise}] {msg}";
const RUNNING: &str = "{spinner} [{elapsed_precise}] {percent:>3}% ETA {eta} · {msg}";

/// The data pages a unit reads: its slots, or for a unit that runs to the
/// end of its table (or reads it whole, pages unknown) the plan's unit size.
fn unit_weight(unit: &Unit, unit_pages: u64) -> u64 {
    match unit.end_slot {
        Some(end) => end.saturating_sub(unit.first_slot).max(1),
        None => unit_pages.max(1),
    }
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
        // No percent or ETA until a unit is done: "0% ETA 0s" says nothing.
        bar.set_style(ProgressStyle::with_template(STARTING).unwrap());
        bar.enable_steady_tick(Duration::from_millis(200));
        Display {
            bar,
            pages_done: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            units_done: AtomicUsize::new(0),
            units: AtomicUsize::new(0),
            tables_done: AtomicUsize::new(0),
            tables: AtomicUsize::new(0),
            unit_pages: AtomicU64::new(1),
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
        self.bar
            .set_position(self.pages_done.load(Ordering::Relaxed));
        self.bar.set_message(format!(
            "{}/{} tables · {}/{} units · {} · {:.0} rows/s",
            self.tables_done.load(Ordering::Relaxed),
            self.tables.load(Ordering::Relaxed),
            done,
            units,
            counted(rows, "row"),
            rows as f64 / secs
        ));
    }
}

impl Progress for Display {
    fn started(&self, plan: &Plan, start: &RunStart) {
        self.tables.store(plan.listed_len(), Ordering::Relaxed);
        self.units.store(plan.units.len(), Ordering::Relaxed);
        // Percent and ETA by data pages, which hold the rows: the last
        // units of a run are small, so counting units ran ahead of rows.
        self.unit_pages
            .store(plan.unit_pages.max(1), Ordering::Relaxed);
        self.bar.set_length(
            plan.units
                .iter()
                .map(|u| unit_weight(u, plan.unit_pages))
                .sum(),
        );
        self.bar.println(format!(
            "{} in {}, {}, snapshot {}",
            crate::count(plan.listed_len(), "table"),
            crate::count(plan.units.len(), "unit"),
            crate::workers_text(start),
            start.snapshot_number.map_or("-".into(), |n| n.to_string())
        ));
        self.refresh();
    }

    fn rows_read(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.refresh();
    }

    fn unit_finished(&self, unit: &Unit, _rows: u64) {
        let pages = unit_weight(unit, self.unit_pages.load(Ordering::Relaxed));
        if self.units_done.fetch_add(1, Ordering::Relaxed) == 0 {
            self.bar
                .set_style(ProgressStyle::with_template(RUNNING).unwrap());
        }
        self.pages_done.fetch_add(pages, Ordering::Relaxed);
        self.refresh();
    }

    fn more_units(&self, units: &[Unit]) {
        let unit_pages = self.unit_pages.load(Ordering::Relaxed);
        self.units.fetch_add(units.len(), Ordering::Relaxed);
        self.bar
            .inc_length(units.iter().map(|u| unit_weight(u, unit_pages)).sum());
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

/// `--plan --progress json`: the plan as one JSON object, every table (or
/// view, query) with its pointer pages, units, columns and, for a table,
/// its estimated size.
pub fn plan_json(plan: &Plan, start: &RunStart, client: &str) -> serde_json::Value {
    let tables: Vec<_> = plan
        .tables
        .iter()
        .filter(|t| !t.role.is_helper())
        .map(|t| {
            json!({
                "name": t.name,
                "kind": t.kind.as_str(),
                "pointer_pages": t.pointer_pages,
                "units": t.unit_count,
                "columns": t.columns,
                "condition": t.condition,
                "split_by": t.split_by,
                "estimate": t.estimate.as_ref().map(estimate_json),
            })
        })
        .collect();
    json!({
        "event": "plan",
        "tables": tables,
        "units": plan.units.len(),
        "unit_pages": plan.unit_pages,
        "server": start.server_version,
        "workers": start.workers,
        "processes": start.processes,
        "client": client,
    })
}

/// The rows a run is estimated to read: its tables' estimates added up;
/// `None` where one is unknown, or the run reads views, queries, changes
/// (`--since`) or only rows `--where` chooses, which it does not estimate.
fn estimated_rows(plan: &Plan) -> Option<u64> {
    plan.tables
        .iter()
        .filter(|t| !t.role.is_helper())
        .map(|t| match (&t.role, &t.estimate) {
            _ if t.condition.is_some() => None,
            (fbunload::Role::Whole | fbunload::Role::WholeBecause(_), Some(e)) => e.rows,
            _ => None,
        })
        .sum()
}

/// A table's estimate: rows and bytes (data pages x page size), `null`
/// where unknown, and what they stand on.
fn estimate_json(e: &Estimate) -> serde_json::Value {
    json!({
        "rows": e.rows,
        "bytes": e.bytes(),
        "blob_bytes": e.blob_bytes,
        "data_pages": e.data_pages,
        "page_size": e.page_size,
        "sampled_pages": e.sampled_pages,
        "basis": e.basis.as_str(),
    })
}

/// `--progress json`'s last line when a run fails: what failed, its kind
/// (`usage`, `database`, `output`, `verify`, `interrupted`, ...) and the
/// exit status that follows, in place of the plain `fbunload: error:` line.
pub fn error_event(message: &str, kind: &str, exit_code: i32) {
    let event = json!({"event": "error", "message": message, "kind": kind, "exit_code": exit_code});
    let _ = writeln!(std::io::stderr().lock(), "{event}");
}

/// `--progress json`: one JSON object per line on stderr for every event,
/// and the summary last. Lines are whole: workers write under a lock.
pub struct JsonLines {
    start: Instant,
    rows: AtomicU64,
    units_done: AtomicUsize,
    units: AtomicUsize,
    /// Table names by index, for unit events.
    tables: Mutex<Vec<String>>,
    /// Of an incremental run (`--since`), how each table is read, by
    /// name, for table events: why it is read whole, or `None` for its
    /// changes.
    modes: Mutex<Vec<(String, Option<String>)>>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl JsonLines {
    pub fn new() -> Self {
        Self::to(Box::new(std::io::stderr()))
    }

    fn to(out: Box<dyn Write + Send>) -> Self {
        JsonLines {
            start: Instant::now(),
            rows: AtomicU64::new(0),
            units_done: AtomicUsize::new(0),
            units: AtomicUsize::new(0),
            tables: Mutex::new(Vec::new()),
            modes: Mutex::new(Vec::new()),
            out: Mutex::new(out),
        }
    }

    fn emit(&self, event: serde_json::Value) {
        self.emit_counted(|| event);
    }

    /// Writes the event `count` makes under the output's lock: what it
    /// counts and its time then follow the order of the lines (a later
    /// line never shows fewer units done, or an earlier time).
    fn emit_counted(&self, count: impl FnOnce() -> serde_json::Value) {
        let mut out = self.out.lock().unwrap();
        let mut event = count();
        event["seconds"] = json!(self.seconds());
        // Progress must never stop the unload: a closed stderr is ignored.
        let _ = writeln!(out, "{event}");
    }

    fn seconds(&self) -> f64 {
        (self.start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0
    }

    /// The run's outcome, in the shape of the text summary.
    pub fn summary(&self, summary: &Summary) {
        let tables: Vec<_> = summary
            .tables
            .iter()
            .map(|t| {
                let mut table = json!({
                    "name": t.name,
                    "rows": t.rows,
                    "bytes": t.bytes,
                    "units": t.units,
                    "path": t.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                });
                if let Some(change) = &t.change {
                    let mut described = mode_json(change.whole_because.as_deref(), t.rows);
                    if change.whole_because.is_none() {
                        described["deletes"] = json!(change.deletes);
                        described["rechecked_units"] = json!(change.rechecked_units);
                    }
                    table["change"] = described;
                }
                table
            })
            .collect();
        self.emit(json!({
            "event": "summary",
            // On the events' clock, so the last event is never later.
            "seconds": self.seconds(),
            "rows": summary.rows(),
            "bytes": summary.bytes(),
            "workers": summary.start.workers,
            "processes": summary.start.processes,
            "snapshot_number": summary.start.snapshot_number,
            "verified": summary.verified,
            "retries": summary.retries,
            "tables": tables,
        }));
    }
}

impl JsonLines {
    /// A PostgreSQL load's outcome beyond the summary: where it went,
    /// whether it synced, and what did not translate.
    pub fn postgres(&self, loaded: &fbunload::postgres::Loaded) {
        let untranslated: Vec<_> = loaded
            .untranslated
            .iter()
            .map(|u| {
                json!({
                    "kind": u.kind,
                    "name": u.name,
                    "table": u.table,
                    "why": u.why,
                })
            })
            .collect();
        self.emit(json!({
            "event": "postgres",
            "target": loaded.target,
            "schema": loaded.schema,
            "synced": loaded.synced,
            "untranslated": untranslated,
            "resumed": loaded.resumed.as_ref().map(|r| json!({
                "first_snapshot_number": r.first_snapshot_number,
                "first_transaction": r.first_transaction,
                "snapshot_number": r.snapshot_number,
                "units_kept": r.units_kept,
                "units_read_again": r.units_read_again,
            })),
        }));
    }
}

/// How an incremental run reads a table: its changes, `rows` upserts,
/// or whole, and why.
fn mode_json(whole_because: Option<&str>, rows: u64) -> serde_json::Value {
    match whole_because {
        Some(why) => json!({"mode": "full", "reason": why}),
        None => json!({"mode": "changes", "upserts": rows}),
    }
}

impl Progress for JsonLines {
    fn started(&self, plan: &Plan, start: &RunStart) {
        self.units.store(plan.units.len(), Ordering::Relaxed);
        *self.tables.lock().unwrap() = plan.tables.iter().map(|t| t.name.clone()).collect();
        *self.modes.lock().unwrap() = plan
            .tables
            .iter()
            .filter_map(|t| match &t.role {
                fbunload::Role::Upserts => Some((t.name.clone(), None)),
                fbunload::Role::WholeBecause(why) => Some((t.name.clone(), Some(why.clone()))),
                _ => None,
            })
            .collect();
        self.emit(json!({
            "event": "started",
            "seconds": self.seconds(),
            "tables": plan.listed_len(),
            "units": plan.units.len(),
            "workers": start.workers,
            "processes": start.processes,
            "snapshot_number": start.snapshot_number,
            "server": start.server_version,
            "estimated_rows": estimated_rows(plan),
        }));
    }

    fn rows_read(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    fn unit_finished(&self, unit: &Unit, rows: u64) {
        let table = self.tables.lock().unwrap().get(unit.table).cloned();
        self.emit_counted(|| {
            json!({
                "event": "unit",
                "table": table,
                "seq": unit.seq,
                "rows": rows,
                "units_done": self.units_done.fetch_add(1, Ordering::Relaxed) + 1,
                "units": self.units.load(Ordering::Relaxed),
                "rows_read": self.rows.load(Ordering::Relaxed),
            })
        });
    }

    fn more_units(&self, units: &[Unit]) {
        self.emit_counted(|| {
            json!({
                "event": "more_units",
                "units": units.len(),
                "units_total": self.units.fetch_add(units.len(), Ordering::Relaxed) + units.len(),
            })
        });
    }

    fn table_finished(&self, table: &str, rows: u64) {
        let mut event = json!({
            "event": "table",
            "seconds": self.seconds(),
            "table": table,
            "rows": rows,
        });
        let modes = self.modes.lock().unwrap();
        if let Some((_, why)) = modes.iter().find(|(name, _)| name == table) {
            // Its deletes and rechecked units are known once the run
            // ends: in the summary event.
            event["change"] = mode_json(why.as_deref(), rows);
        }
        drop(modes);
        self.emit(event);
    }

    fn warning(&self, message: &str) {
        self.emit(json!({"event": "warning", "seconds": self.seconds(), "message": message}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines a test's [`JsonLines`] wrote.
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn unit_events_from_many_workers_count_up_line_by_line() {
        let lines = Lines::default();
        let events = JsonLines::to(Box::new(lines.clone()));
        let unit = Unit {
            table: 0,
            seq: 0,
            first_slot: 0,
            end_slot: None,
        };
        std::thread::scope(|workers| {
            for _ in 0..8 {
                workers.spawn(|| {
                    for _ in 0..500 {
                        events.rows_read(1);
                        events.unit_finished(&unit, 1);
                    }
                });
            }
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let counted: Vec<(u64, u64)> = text
            .lines()
            .map(|line| {
                let event: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    event["units_done"].as_u64().unwrap(),
                    event["rows_read"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(counted.len(), 4000);
        for (i, pair) in counted.windows(2).enumerate() {
            assert_eq!(pair[1].0, pair[0].0 + 1, "line {}: {pair:?}", i + 2);
            assert!(pair[1].1 >= pair[0].1, "line {}: {pair:?}", i + 2);
        }
    }

    #[test]
    fn progress_weighs_units_by_their_pages() {
        let unit = |first_slot, end_slot| Unit {
            table: 0,
            seq: 0,
            first_slot,
            end_slot,
        };
        // A big unit counts for more than the small last ones.
        assert_eq!(unit_weight(&unit(0, Some(64)), 64), 64);
        assert_eq!(unit_weight(&unit(64, Some(72)), 64), 8);
        // To the end of the table, or the whole of it: the plan's unit size.
        assert_eq!(unit_weight(&unit(72, None), 64), 64);
        assert_eq!(unit_weight(&unit(5, Some(5)), 64), 1);
    }
}
