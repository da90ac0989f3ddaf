//! The part files of a table cut into parts (`--max-rows`,
//! `--max-bytes`): named, created in the staging directory as the format
//! asks for them, and published together when the table is complete.
//!
//! Parts go beside each other in the output directory,
//! `<TABLE>.000001.csv`, `<TABLE>.000002.csv`, … (`names::part_file_name`),
//! so a glob or a loader's file list takes them as they are. None is
//! there before all are: a table whose run fails leaves none of its parts.
//! They are renamed in last to first, so that even a run killed between
//! two renames leaves no set that starts at part 1 and looks whole.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use fbunload_exec::FileDigest;
use fbunload_format::{NextPart, PartLimits};

use crate::directory::OutputDir;
use crate::names::part_file_name;

/// One table's parts.
pub(crate) struct PartFiles {
    dir: Arc<OutputDir>,
    table: String,
    extension: String,
    pub limits: PartLimits,
    /// Parts created so far.
    made: AtomicUsize,
}

impl PartFiles {
    pub fn new(dir: Arc<OutputDir>, table: &str, extension: &str, limits: PartLimits) -> Self {
        PartFiles {
            dir,
            table: table.to_string(),
            extension: extension.to_string(),
            limits,
            made: AtomicUsize::new(0),
        }
    }

    /// The name of part `number`, from 1.
    pub fn name(&self, number: usize) -> String {
        part_file_name(&self.table, &self.extension, number)
    }

    pub fn dir(&self) -> &OutputDir {
        &self.dir
    }

    /// Creates the next part in the staging directory.
    fn create_next(&self) -> io::Result<File> {
        let number = self.made.fetch_add(1, Ordering::SeqCst) + 1;
        self.dir.create(&self.name(number))
    }

    /// Where a format writes: each call is the next part.
    pub fn opener(self: &Arc<Self>) -> NextPart {
        let parts = self.clone();
        Box::new(
            move || Ok(Box::new(BufWriter::new(parts.create_next()?)) as Box<dyn Write + Send>),
        )
    }

    /// Moves every part into the output directory, last first; the first
    /// part's path and every part's digest, in order.
    pub fn publish(&self) -> io::Result<(PathBuf, Vec<FileDigest>)> {
        let made = self.made.load(Ordering::SeqCst);
        let mut files = Vec::with_capacity(made);
        let mut first = None;
        for number in (1..=made).rev() {
            let (path, digests) = self.dir.publish(&self.name(number))?;
            files.extend(digests.into_iter().rev());
            first = Some(path);
        }
        files.reverse();
        let first = first.ok_or_else(|| io::Error::other("a table has a part at least"))?;
        Ok((first, files))
    }
}
