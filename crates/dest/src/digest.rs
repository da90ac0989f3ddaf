//! SHA-256 of the files a run publishes, for its manifest and for
//! `fbunload check`.
//!
//! A file written front to back by one writer is hashed as its bytes go
//! by ([`RunningDigest`], [`Hashing`]): a table's file is complete when its
//! last unit is, and reading back a file of many GB to hash it then would
//! be serial work at the end of the table, on one core. Bytes that are
//! taken back are taken back from the digest too: a unit writing straight
//! into a table's file, cut back (`set_len`) when its connection is lost,
//! hashes into a copy of the table's digest that is dropped with it.
//! Files written otherwise (compressed, in parts) are hashed by reading
//! them back once they are complete and synced ([`digest_tree`]); debug
//! builds read back every file and compare.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use fbunload_exec::FileDigest;

use crate::writeback::{self, OnFile};
use sha2::{Digest, Sha256};

/// Reads `file` to its end: its length and SHA-256, in lowercase hex.
pub(crate) fn sha256(file: &mut File) -> io::Result<(u64, String)> {
    sha256_copied(file, &mut io::sink())
}

/// Reads `file` to its end, writing each byte read to `copy`: its length
/// and SHA-256, in lowercase hex (of what was read, so of what `copy` got).
pub(crate) fn sha256_copied(file: &mut File, copy: &mut impl Write) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buffer[..n]);
                copy.write_all(&buffer[..n])?;
                bytes += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((bytes, hex(&hasher.finalize())))
}

/// The SHA-256 of `bytes`, in lowercase hex.
pub(crate) fn sha256_of(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The length and SHA-256 of the bytes written so far.
#[derive(Clone, Default)]
pub(crate) struct RunningDigest {
    hasher: Sha256,
    bytes: u64,
}

impl RunningDigest {
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
    }

    /// [`Self::update`] with bytes just written at the end of `file`, which
    /// this digest has hashed from its first byte (so it knows where the
    /// file ends): starts the file's writeback as it grows (`writeback`).
    pub fn update_written(&mut self, file: &File, bytes: &[u8]) {
        let from = self.bytes;
        self.update(bytes);
        writeback::wrote(file, from, self.bytes);
    }

    /// The digest of a file the manifest calls `name`.
    pub fn finish(self, name: &str) -> FileDigest {
        FileDigest {
            name: name.to_string(),
            bytes: self.bytes,
            sha256: hex(&self.hasher.finalize()),
        }
    }
}

/// A writer that hashes what it passes on to a file (which it also asks
/// the kernel to start writing back as it grows, see `writeback`).
pub(crate) struct Hashing<'d, W> {
    pub inner: W,
    pub digest: &'d mut RunningDigest,
}

impl<W: Write + OnFile> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update_written(self.inner.file(), &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A writer that hashes what it passes on into a digest its owner can read
/// once the writer is gone (one handed to a format's writer); like
/// [`Hashing`], it starts the file's writeback as it grows.
pub(crate) struct SharedHashing<W> {
    pub inner: W,
    pub digest: Arc<Mutex<RunningDigest>>,
}

impl<W: Write + OnFile> Write for SharedHashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest
            .lock()
            .unwrap()
            .update_written(self.inner.file(), &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// Every file of the published entry `path`, which the manifest will call
/// `name`: the file itself, or the files of a directory of parts, in name
/// order (`name/part-00000.parquet`, ...).
pub(crate) fn digest_tree(path: &Path, name: &str) -> io::Result<Vec<FileDigest>> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        let (bytes, sha256) = sha256(&mut File::open(path)?)?;
        return Ok(vec![FileDigest {
            name: name.to_string(),
            bytes,
            sha256,
        }]);
    }
    let mut entries: Vec<_> = fs::read_dir(path)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    let mut digests = Vec::new();
    for entry in entries {
        let child = format!("{name}/{}", entry.to_string_lossy());
        digests.extend(digest_tree(&path.join(&entry), &child)?);
    }
    Ok(digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_digest_is_the_digest_of_the_file_written_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut digest = RunningDigest::default();
        let mut out = Hashing {
            inner: File::create(&path).unwrap(),
            digest: &mut digest,
        };
        out.write_all(b"head\n").unwrap();
        // A unit that is taken back hashes into a copy, dropped with it.
        let mut taken_back = out.digest.clone();
        taken_back.update(b"lost rows\n");
        for chunk in [&b"a,1\n"[..], b"", b"b,2\n"] {
            out.write_all(chunk).unwrap();
        }
        drop(out);
        let shared = Arc::new(Mutex::new(RunningDigest::default()));
        let mut appended = SharedHashing {
            inner: fs::OpenOptions::new().append(true).open(&path).unwrap(),
            digest: shared.clone(),
        };
        appended.write_all(b"c,3\n").unwrap();
        drop(appended);
        let mut whole = digest.clone();
        whole.update(b"c,3\n");
        assert_eq!(
            vec![whole.finish("t.csv")],
            digest_tree(&path, "t.csv").unwrap(),
            "read back"
        );
        assert_eq!(shared.lock().unwrap().clone().finish("x").bytes, 4);
    }

    #[test]
    fn digests_are_those_of_the_standard() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("abc"), b"abc").unwrap();
        fs::create_dir(dir.path().join("T.parquet")).unwrap();
        fs::write(dir.path().join("T.parquet/part-00001.parquet"), b"").unwrap();
        fs::write(dir.path().join("T.parquet/part-00000.parquet"), b"abc").unwrap();
        // FIPS 180-2's example for "abc", and the digest of nothing.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let file = digest_tree(&dir.path().join("abc"), "abc").unwrap();
        assert_eq!(
            file,
            [FileDigest {
                name: "abc".into(),
                bytes: 3,
                sha256: abc.into()
            }]
        );
        let parts = digest_tree(&dir.path().join("T.parquet"), "T.parquet").unwrap();
        let listed: Vec<_> = parts
            .iter()
            .map(|d| (d.name.as_str(), d.bytes, d.sha256.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("T.parquet/part-00000.parquet", 3, abc),
                ("T.parquet/part-00001.parquet", 0, empty)
            ]
        );
    }
}
