//! SHA-256 of the files a run publishes, for its manifest and for
//! `fbunload check`.
//!
//! A table's files are hashed by reading them back once they are complete
//! and synced, not as their bytes go by: a unit writing straight into a
//! table's file is cut back (`set_len`) when its connection is lost and is
//! read again, so the bytes that passed through a writer are not always
//! the file's. Reading back a file just written mostly hits the page
//! cache, and it runs on the worker that completed the table while the
//! others go on reading.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use fbunload_exec::FileDigest;
use sha2::{Digest, Sha256};

/// Reads `file` to its end: its length and SHA-256, in lowercase hex.
pub(crate) fn sha256(file: &mut File) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buffer[..n]);
                bytes += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((bytes, hex(&hasher.finalize())))
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
