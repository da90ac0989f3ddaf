//! Table names as file names.
//!
//! Table names come from the database and can hold anything: `/`, `..`,
//! control characters, 63 four-byte characters (252 bytes, more than most
//! file systems allow in a name with an extension). Every table gets a
//! file name of its own that stays in the output directory.
//!
//! Windows forbids more than Unix does: `< > : " | ? *` in a name, and the
//! device names `CON`, `NUL`, `COM1`… even with an extension (`NUL.csv` is
//! the null device). Those are escaped on Windows only, so the files a
//! Unix run writes keep the names they always had; on Windows a table
//! `Mixed Case "Quoted"` becomes `Mixed Case %22Quoted%22.csv`.

/// The longest file name written, in bytes: 255 is the limit of ext4, XFS,
/// NTFS and APFS; the rest leaves room for the extension.
const MAX_NAME_BYTES: usize = 240;

/// `<table>.<extension>`, with `/`, `%`, `\`, control characters and a
/// leading `.` escaped as `%XX` (on Windows also the characters and
/// device names it forbids, see the module docs), so every table gets its
/// own file and none can point outside the directory or be hidden. A name
/// too long for a file system is cut and given a hash of the whole name,
/// so it stays unique: `LONG…NAME~1a2b3c4d5e6f7a8b.csv`. The table's real
/// name is in the summary and in Parquet and Arrow metadata.
pub fn file_name_for(table: &str, extension: &str) -> String {
    let rules = if cfg!(windows) {
        NameRules::Windows
    } else {
        NameRules::Unix
    };
    file_name_under(rules, table, extension)
}

/// Part `number` (from 1) of a table cut into parts: `<table>.000001.<extension>`,
/// escaped and cut as [`file_name_for`] does. Six digits sort in order up
/// to 999,999 parts; more get more digits. Parts of every table carry a
/// number, so no part can take the name of another table's part, dots in
/// table names or not: the number is always the last before the extension.
pub fn part_file_name(table: &str, extension: &str, number: usize) -> String {
    file_name_for(table, &format!("{number:06}.{extension}"))
}

/// Which file system's rules a name must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRules {
    Unix,
    Windows,
}

/// Characters Windows does not allow in a file name, beyond `/` and `\`.
pub(crate) const FORBIDDEN_ON_WINDOWS: &[char] = &['<', '>', ':', '"', '|', '?', '*'];

/// Names Windows keeps for devices, whatever extension follows them.
const WINDOWS_DEVICES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

fn file_name_under(rules: NameRules, table: &str, extension: &str) -> String {
    let mut name = String::with_capacity(table.len() + extension.len() + 1);
    for c in table.chars() {
        match c {
            '/' | '%' | '\\' => name.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() && (c as u32) < 0x100 => {
                name.push_str(&format!("%{:02X}", c as u32))
            }
            c if rules == NameRules::Windows && FORBIDDEN_ON_WINDOWS.contains(&c) => {
                name.push_str(&format!("%{:02X}", c as u32))
            }
            c => name.push(c),
        }
    }
    if name.starts_with('.') {
        // Not hidden, and never "." or "..".
        name.replace_range(0..1, "%2E");
    }
    if rules == NameRules::Windows && is_windows_device(&name) {
        // `%43ON.csv` is a file; `CON.csv` is the console.
        let first = name.chars().next().unwrap_or('_');
        name.replace_range(..first.len_utf8(), &format!("%{:02X}", first as u32));
    }
    let room = MAX_NAME_BYTES.saturating_sub(extension.len() + 1);
    if name.len() > room {
        let suffix = format!("~{:016x}", fnv1a(table.as_bytes()));
        let mut cut = room - suffix.len();
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str(&suffix);
    }
    name.push('.');
    name.push_str(extension);
    name
}

/// Whether Windows takes `name` (before its first dot, trailing spaces
/// ignored, any case) for a device: `CON`, `nul`, `COM1 `, `LPT9.x`.
fn is_windows_device(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or("").trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    if WINDOWS_DEVICES.contains(&upper.as_str()) {
        return true;
    }
    let numbered = ["COM", "LPT"]
        .iter()
        .find_map(|prefix| upper.strip_prefix(prefix));
    // COM0-9 and LPT0-9, and the superscript digits Windows also takes.
    matches!(numbered, Some(n) if n.chars().count() == 1
        && n.chars().all(|d| d.is_ascii_digit() || matches!(d, '¹' | '²' | '³')))
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (std's
/// hasher is not), so a table keeps its file name from run to run.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_cannot_escape_the_directory() {
        let file_name_for = |table, extension| file_name_under(NameRules::Unix, table, extension);
        assert_eq!(file_name_for("ORDERS", "csv"), "ORDERS.csv");
        assert_eq!(file_name_for("a/b%c", "csv"), "a%2Fb%25c.csv");
        assert_eq!(file_name_for("..", "csv"), "%2E..csv");
        assert_eq!(file_name_for("a\\b", "csv"), "a%5Cb.csv");
        assert_eq!(
            file_name_for("My \"odd\" table", "csv"),
            "My \"odd\" table.csv"
        );
        assert_eq!(file_name_for("T\x1b[2J\n", "csv"), "T%1B[2J%0A.csv");
    }

    #[test]
    fn on_windows_forbidden_characters_and_device_names_are_escaped() {
        let windows = |table| file_name_under(NameRules::Windows, table, "csv");
        assert_eq!(
            windows("Mixed Case \"Quoted\""),
            "Mixed Case %22Quoted%22.csv"
        );
        assert_eq!(windows("a<b>c:d|e?f*"), "a%3Cb%3Ec%3Ad%7Ce%3Ff%2A.csv");
        assert_eq!(windows("CON"), "%43ON.csv");
        assert_eq!(windows("nul"), "%6Eul.csv");
        assert_eq!(windows("Com1"), "%43om1.csv");
        assert_eq!(windows("LPT9.old"), "%4CPT9.old.csv");
        assert_eq!(windows("AUX "), "%41UX .csv");
        assert_eq!(windows("CONSOLE"), "CONSOLE.csv");
        assert_eq!(windows("COM10"), "COM10.csv");
        assert_eq!(windows("ORDERS"), "ORDERS.csv");
        // Unix names stay as they were.
        let unix = |table| file_name_under(NameRules::Unix, table, "csv");
        assert_eq!(unix("Mixed Case \"Quoted\""), "Mixed Case \"Quoted\".csv");
        assert_eq!(unix("CON"), "CON.csv");
    }

    #[test]
    fn parts_are_numbered_before_the_extension() {
        assert_eq!(
            part_file_name("ORDERS", "csv.zst", 1),
            "ORDERS.000001.csv.zst"
        );
        assert_eq!(part_file_name("a/b", "parquet", 42), "a%2Fb.000042.parquet");
        assert_eq!(part_file_name("T", "csv", 1_234_567), "T.1234567.csv");
        let long = part_file_name(&"𝄞".repeat(63), "jsonl", 1);
        assert!(long.len() <= MAX_NAME_BYTES, "{}", long.len());
        assert!(long.ends_with(".000001.jsonl"), "{long}");
    }

    #[test]
    fn names_too_long_are_cut_and_stay_unique() {
        // 63 four-byte characters: 252 bytes before the extension.
        let long_a = "𝄞".repeat(63);
        let long_b = format!("{}𝄢", "𝄞".repeat(62));
        let a = file_name_for(&long_a, "parquet");
        let b = file_name_for(&long_b, "parquet");
        assert!(a.len() <= MAX_NAME_BYTES, "{}", a.len());
        assert!(a.ends_with(".parquet") && a.contains('~'));
        assert_ne!(a, b);
        assert_eq!(a, file_name_for(&long_a, "parquet"), "stable");
    }
}
