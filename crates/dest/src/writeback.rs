//! Starting the disk's work while a file is still being written.
//!
//! A run's files are synced before the switch publishes them. The
//! kernel starts writing dirty pages on its own only past
//! `dirty_background_ratio` (10% of memory by default) or after 30 s, so
//! without help that sync waits for up to gigabytes,
//! with every core idle: 0.55 s for 1.5 GB written just before, here. As
//! a table's file grows past each [`WRITEBACK_EVERY`] bytes, we ask the
//! kernel to start writing what came before (`sync_file_range` with
//! `SYNC_FILE_RANGE_WRITE`, which does not wait for the disk), so the
//! disk works while the rows are still coming and the last sync has only
//! the last few megabytes left. A hint only: where it is not available
//! (not Linux, a file system without it) nothing changes but the timing.

use std::fs::File;

/// Bytes written between two requests to start writing back.
pub(crate) const WRITEBACK_EVERY: u64 = 8 << 20;

/// A writer's file, for the hint.
pub(crate) trait OnFile {
    fn file(&self) -> &File;
}

impl OnFile for File {
    fn file(&self) -> &File {
        self
    }
}

impl OnFile for &mut File {
    fn file(&self) -> &File {
        self
    }
}

/// After bytes `from..to` of `file` were written: when the file grew past
/// a multiple of [`WRITEBACK_EVERY`], starts writing back what lies before
/// that multiple.
pub(crate) fn wrote(file: &File, from: u64, to: u64) {
    if let Some((start, end)) = range_to_write_back(from, to) {
        start_writeback(file, start, end);
    }
}

/// The bytes to start writing back once `from..to` was written: whole
/// chunks of [`WRITEBACK_EVERY`] ending at the last multiple reached, from
/// one chunk before the write began (in case the previous request came
/// while that chunk was still being filled), or none if no multiple was
/// passed.
fn range_to_write_back(from: u64, to: u64) -> Option<(u64, u64)> {
    let (first, last) = (from / WRITEBACK_EVERY, to / WRITEBACK_EVERY);
    (last > first).then(|| {
        (
            first.saturating_sub(1) * WRITEBACK_EVERY,
            last * WRITEBACK_EVERY,
        )
    })
}

#[cfg(target_os = "linux")]
fn start_writeback(file: &File, start: u64, end: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor for as long as `file` lives; the call
    // reads no memory of ours. Its result is ignored: it is a hint, and
    // the sync that follows reports any failure to write.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            start as libc::off64_t,
            (end - start) as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _start: u64, _end: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    const MB8: u64 = WRITEBACK_EVERY;

    #[test]
    fn writeback_starts_each_time_the_file_passes_a_multiple() {
        assert_eq!(range_to_write_back(0, MB8 - 1), None);
        assert_eq!(range_to_write_back(MB8 - 10, MB8 - 1), None);
        assert_eq!(range_to_write_back(MB8 - 10, MB8), Some((0, MB8)));
        assert_eq!(
            range_to_write_back(MB8 + 5, 2 * MB8 + 5),
            Some((0, 2 * MB8))
        );
        assert_eq!(
            range_to_write_back(2 * MB8 + 5, 3 * MB8),
            Some((MB8, 3 * MB8))
        );
        // One big write (a spilled unit drained at once) passes several.
        assert_eq!(
            range_to_write_back(3 * MB8 + 1, 7 * MB8 + 1),
            Some((2 * MB8, 7 * MB8))
        );
        assert_eq!(range_to_write_back(3 * MB8 + 1, 3 * MB8 + 9), None);
    }

    #[test]
    fn a_hint_on_a_real_file_leaves_its_bytes_as_written() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut file = File::create(&path).unwrap();
        let chunk = vec![b'x'; (MB8 / 2) as usize + 3];
        let mut written = 0u64;
        for _ in 0..5 {
            file.write_all(&chunk).unwrap();
            wrote(&file, written, written + chunk.len() as u64);
            written += chunk.len() as u64;
        }
        file.sync_all().unwrap();
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back.len() as u64, written);
        assert!(back.iter().all(|&b| b == b'x'));
    }
}
