//! Where a follow's time goes, phase by phase: with the environment
//! variable `FBUNLOAD_FOLLOW_PHASES` set, a follow adds up the wall time
//! of each phase (attaching to Firebird, reading segments, each statement
//! sent to PostgreSQL, the commit, waiting idle, …) and writes one line
//! per phase to standard error at its end, in the order they first ran.
//! A measuring aid for `benches/follow.sh` (docs/PERFORMANCE.md), not an
//! option: a follow without the variable pays one flag check per phase.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// 0: not looked yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);
static SPENT: Mutex<Vec<(&'static str, Duration, u64)>> = Mutex::new(Vec::new());

fn on() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os("FBUNLOAD_FOLLOW_PHASES").is_some();
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        state => state == 2,
    }
}

/// Adds the time until it is dropped to phase `name`.
pub struct Timed {
    name: &'static str,
    since: Instant,
}

impl Drop for Timed {
    fn drop(&mut self) {
        add(self.name, self.since.elapsed());
    }
}

/// Times phase `name` until the value returned is dropped.
#[must_use]
pub fn timed(name: &'static str) -> Option<Timed> {
    on().then(|| Timed {
        name,
        since: Instant::now(),
    })
}

fn add(name: &'static str, spent: Duration) {
    let mut all = SPENT.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|(n, _, _)| *n == name) {
        Some((_, total, count)) => {
            *total += spent;
            *count += 1;
        }
        None => all.push((name, spent, 1)),
    }
}

/// Milliseconds from the process's start (its exec) to now, where the
/// system says (Linux: /proc): what the follow found spent before it.
fn since_process_start() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let started_ticks: f64 = fields.get(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // Clock ticks are 100 a second on every Linux this runs on.
    Some((uptime - started_ticks / 100.0) * 1000.0)
}

/// Records the time the process ran before the follow began.
pub fn begin() {
    if on() {
        if let Some(ms) = since_process_start() {
            add(
                "process start",
                Duration::from_secs_f64(ms.max(0.0) / 1000.0),
            );
        }
    }
}

/// Writes each phase's total to standard error.
pub fn report() {
    if !on() {
        return;
    }
    let all = SPENT.lock().unwrap_or_else(|e| e.into_inner());
    for (name, spent, count) in all.iter() {
        eprintln!(
            "fbunload follow phase: {name:<48} {:9.1} ms {count:7}x",
            spent.as_secs_f64() * 1000.0
        );
    }
}
