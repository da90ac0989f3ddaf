//! The blobs one transaction stored, held in memory until the
//! transaction's budget is passed, then in an unlinked temporary file of
//! their own, so a transaction of many or big blobs stays within
//! `--memory` as its row images do (`transactions.rs`).
//!
//! A blob is read back when a change that names it is decoded
//! ([`Blobs::for_images`]): only that change's blobs are in memory then.
//! Firebird stores a blob again with each change of its row; in the file
//! a blob stored again goes at the end, and its old bytes stay unused
//! until the transaction ends and the file goes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use crate::protocol::BlobId;
use crate::record::{RecordFormat, Value};
use crate::JournalError;

#[derive(Debug, Default)]
pub struct Blobs {
    memory: HashMap<BlobId, Vec<u8>>,
    /// Bytes held in `memory`.
    held: usize,
    /// Once spilled: where every blob is.
    file: Option<BlobFile>,
}

#[derive(Debug)]
struct BlobFile {
    file: File,
    /// Each blob's offset and length.
    places: HashMap<BlobId, (u64, u64)>,
    /// Where the next piece goes.
    end: u64,
}

fn spill_error(e: std::io::Error) -> JournalError {
    JournalError::Io(format!(
        "the temporary file of a big transaction's blobs: {e}"
    ))
}

impl Blobs {
    /// Takes `data`, the next piece of blob `id`: the start of the blob
    /// unless `continued` (its last piece was cut by the end of a block).
    pub(crate) fn store(
        &mut self,
        id: BlobId,
        data: &[u8],
        continued: bool,
    ) -> Result<(), JournalError> {
        let Some(BlobFile { file, places, end }) = &mut self.file else {
            let bytes = self.memory.entry(id).or_default();
            if !continued {
                self.held -= bytes.len();
                bytes.clear();
            }
            bytes.extend_from_slice(data);
            self.held += data.len();
            return Ok(());
        };
        let mut piece = Cow::Borrowed(data);
        if continued {
            if let Some(&(offset, length)) = places.get(&id) {
                if offset + length == *end {
                    // It is the last in the file: it goes on there.
                    file.seek(SeekFrom::Start(*end)).map_err(spill_error)?;
                    file.write_all(data).map_err(spill_error)?;
                    *end += data.len() as u64;
                    places.insert(id, (offset, length + data.len() as u64));
                    return Ok(());
                }
                let mut whole = vec![0u8; length as usize];
                file.seek(SeekFrom::Start(offset)).map_err(spill_error)?;
                file.read_exact(&mut whole).map_err(spill_error)?;
                whole.extend_from_slice(data);
                piece = Cow::Owned(whole);
            }
        }
        file.seek(SeekFrom::Start(*end)).map_err(spill_error)?;
        file.write_all(&piece).map_err(spill_error)?;
        places.insert(id, (*end, piece.len() as u64));
        *end += piece.len() as u64;
        Ok(())
    }

    /// Bytes of blobs held in memory.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// Moves every blob to the file; later ones go there too.
    pub(crate) fn spill(&mut self) -> Result<(), JournalError> {
        if self.file.is_some() {
            return Ok(());
        }
        let mut file = tempfile::tempfile().map_err(spill_error)?;
        let mut places = HashMap::new();
        let mut end = 0u64;
        for (id, bytes) in self.memory.drain() {
            file.write_all(&bytes).map_err(spill_error)?;
            places.insert(id, (end, bytes.len() as u64));
            end += bytes.len() as u64;
        }
        self.held = 0;
        self.file = Some(BlobFile { file, places, end });
        Ok(())
    }

    /// Whether the blobs went to the file.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// How many blobs there are.
    pub fn len(&self) -> usize {
        match &self.file {
            Some(spilled) => spilled.places.len(),
            None => self.memory.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blob `id`'s bytes, read back from the file if they went there.
    pub fn get(&self, id: BlobId) -> Result<Option<Cow<'_, [u8]>>, JournalError> {
        let Some(BlobFile { file, places, .. }) = &self.file else {
            return Ok(self.memory.get(&id).map(|b| Cow::Borrowed(b.as_slice())));
        };
        let Some(&(offset, length)) = places.get(&id) else {
            return Ok(None);
        };
        let mut bytes = vec![0u8; length as usize];
        // Positioned reads: `get` takes `&self`, as decoding does.
        read_at(file, offset, &mut bytes).map_err(spill_error)?;
        Ok(Some(Cow::Owned(bytes)))
    }

    /// The blobs the record images `images` of a table of `format` name,
    /// as [`RecordFormat::decode`] takes them: all of them while they are
    /// in memory, else only these, read back from the file.
    pub fn for_images<'a>(
        &'a self,
        format: &RecordFormat,
        images: &[Option<&[u8]>],
    ) -> Result<Cow<'a, HashMap<BlobId, Vec<u8>>>, JournalError> {
        if self.file.is_none() {
            return Ok(Cow::Borrowed(&self.memory));
        }
        let mut wanted = HashMap::new();
        let none = HashMap::new();
        for image in images.iter().flatten() {
            // Decoded without blobs, a record names the ones it needs.
            let Ok(values) = format.decode(image, &none) else {
                continue;
            };
            for value in values.into_iter().flatten() {
                if let Value::BlobNotCarried(id) = value {
                    if let Some(bytes) = self.get(id)? {
                        wanted.insert(id, bytes.into_owned());
                    }
                }
            }
        }
        Ok(Cow::Owned(wanted))
    }
}

#[cfg(unix)]
fn read_at(file: &File, offset: u64, bytes: &mut [u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, bytes, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut offset: u64, mut bytes: &mut [u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let read = std::os::windows::fs::FileExt::seek_read(file, bytes, offset)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        offset += read as u64;
        bytes = &mut bytes[read..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_read_back_the_same_from_the_file_stored_again_or_cut() {
        let (a, b) = (BlobId(1, 1), BlobId(1, 2));
        let mut blobs = Blobs::default();
        blobs.store(a, b"first", false).unwrap();
        assert_eq!(blobs.held(), 5);
        blobs.spill().unwrap();
        assert_eq!(blobs.held(), 0);
        assert!(blobs.spilled());
        // Cut by a block's end, going on at the file's end.
        blobs.store(b, b"ab", false).unwrap();
        blobs.store(b, b"cd", true).unwrap();
        // Stored again: starts anew.
        blobs.store(a, b"second", false).unwrap();
        // Going on after another blob came: moved to the end whole.
        blobs.store(b, b"ef", true).unwrap();
        assert_eq!(blobs.get(a).unwrap().unwrap().as_ref(), b"second");
        assert_eq!(blobs.get(b).unwrap().unwrap().as_ref(), b"abcdef");
        assert!(blobs.get(BlobId(9, 9)).unwrap().is_none());
        assert_eq!(blobs.len(), 2);
    }
}
