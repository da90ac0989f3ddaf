//! BLOB_HEAVY and WIDE, made only when named: tables that stress what
//! TPC-C rows do not, measured by `benches/wide-and-blobs.sh`.
//!
//! BLOB_HEAVY holds [`crate::GenOptions::blob_rows`] rows whose two blobs
//! together total [`crate::GenOptions::blob_total_mb`] MiB (10,000 rows and
//! 2,048 MiB by default: about 105 KiB of each a row). Half is text (lines
//! with the row number, quotes and a comma, so that CSV quotes it), half
//! binary: the same text enciphered with ChaCha20 under a per-row nonce,
//! deterministic and as incompressible as a photo. Many medium values, not
//! one huge one as BIG_BLOB ([`crate::blobs`]) has: what a document store
//! or an image table holds.
//!
//! WIDE holds [`crate::GenOptions::wide_rows`] rows of
//! [`crate::GenOptions::wide_columns`] columns: the key ID, then `C0002`..
//! `Cnnnn`, column `c` of type `c mod 9` in INTEGER, BIGINT,
//! NUMERIC(18,4), DOUBLE PRECISION, VARCHAR(40), CHAR(10), DATE, TIMESTAMP
//! and BOOLEAN; one in 13 values NULL. Each value is a pure function of its row and column, computed by
//! the engine, so the same options give the same rows.

/// BLOB_HEAVY's text is built (and enciphered) in pieces of this many
/// ASCII characters: under the 8,191 a UTF8 VARCHAR holds.
const PIECE: u64 = 8000;

/// The ChaCha20 key BIN is enciphered with (any fixed 32 bytes do).
const KEY: &str = "fbunload-gen BLOB_HEAVY key 0032";

pub fn blob_heavy_create_sql() -> &'static str {
    "CREATE TABLE BLOB_HEAVY (\n\
     ID INTEGER NOT NULL PRIMARY KEY,\n\
     TXT BLOB SUB_TYPE TEXT CHARACTER SET UTF8,\n\
     BIN BLOB SUB_TYPE BINARY)"
}

/// The bytes of each of a row's two blobs, for `rows` rows totalling
/// `total_mb` MiB.
pub fn blob_bytes_per_row(rows: u64, total_mb: u64) -> u64 {
    total_mb * 1024 * 1024 / rows.max(1) / 2
}

/// How many BLOB_HEAVY rows one transaction inserts: about 128 MiB.
pub fn blob_rows_per_chunk(rows: u64, total_mb: u64) -> u64 {
    (128 * 1024 * 1024 / (2 * blob_bytes_per_row(rows, total_mb)).max(1)).max(1)
}

/// The `EXECUTE BLOCK` that inserts BLOB_HEAVY's rows `lo..hi` (IDs
/// `lo + 1..=hi`), each with two blobs of `bytes` bytes.
pub fn blob_heavy_block(lo: u64, hi: u64, bytes: u64) -> String {
    let full = bytes / PIECE;
    let rest = bytes % PIECE;
    let piece = |len: String| {
        format!(
            "line = RPAD(LPAD(r + 1, 8, '0') || ' ' || LPAD(i, 5, '0') \
             || ': text, \"quoted\", with a comma', 63, '.') || ASCII_CHAR(10);\n\
             piece = RPAD(line, {len}, line);\n\
             t = BLOB_APPEND(t, piece);\n\
             b = BLOB_APPEND(b, ENCRYPT(piece USING CHACHA20 KEY '{KEY}' \
             IV LPAD(r * 100000 + i, 12, '0')));\n"
        )
    };
    let last = if rest > 0 {
        piece(rest.to_string())
    } else {
        String::new()
    };
    format!(
        "EXECUTE BLOCK AS\n\
         DECLARE r BIGINT = {lo};\n\
         DECLARE i INTEGER;\n\
         DECLARE line VARCHAR(64) CHARACTER SET UTF8;\n\
         DECLARE piece VARCHAR({PIECE}) CHARACTER SET UTF8;\n\
         DECLARE t BLOB SUB_TYPE TEXT CHARACTER SET UTF8;\n\
         DECLARE b BLOB SUB_TYPE BINARY;\n\
         BEGIN\n\
         WHILE (r < {hi}) DO BEGIN\n\
         t = NULL; b = NULL; i = 0;\n\
         WHILE (i < {full}) DO BEGIN\n\
         {}\
         i = i + 1;\n\
         END\n\
         {last}\
         INSERT INTO BLOB_HEAVY (ID, TXT, BIN) VALUES (:r + 1, :t, :b);\n\
         r = r + 1;\n\
         END\n\
         END",
        piece(PIECE.to_string()),
    )
}

/// The SQL type of WIDE's column `c` (from 1; 1 is the key).
fn wide_type(c: u32) -> &'static str {
    match c {
        1 => "INTEGER NOT NULL PRIMARY KEY",
        _ => match c % 9 {
            0 => "INTEGER",
            1 => "BIGINT",
            2 => "NUMERIC(18, 4)",
            3 => "DOUBLE PRECISION",
            4 => "VARCHAR(40)",
            5 => "CHAR(10)",
            6 => "DATE",
            7 => "TIMESTAMP",
            _ => "BOOLEAN",
        },
    }
}

/// The name of WIDE's column `c` (from 1).
pub fn wide_column(c: u32) -> String {
    match c {
        1 => "ID".into(),
        _ => format!("C{c:04}"),
    }
}

pub fn wide_create_sql(columns: u32) -> String {
    let columns: Vec<String> = (1..=columns)
        .map(|c| format!("{} {}", wide_column(c), wide_type(c)))
        .collect();
    format!("CREATE TABLE WIDE (\n{})", columns.join(",\n"))
}

/// The PSQL expression of column `c`'s value in row `r` (from 0).
fn wide_value(c: u32) -> String {
    if c == 1 {
        return ":r + 1".into();
    }
    let v = format!("MOD(:r * 7919 + {}, 1000003)", c as u64 * 104_729);
    let value = match c % 9 {
        0 => format!("{v} - 500000"),
        1 => format!("CAST({v} AS BIGINT) * 1000000007 - {c}"),
        2 => format!("CAST(({v} - 500000) * 1.2345 AS NUMERIC(18, 4))"),
        3 => format!("({v} - 500000) / 7e0"),
        4 => format!("'r' || (:r + 1) || ', c{c}: ' || {v}"),
        5 => format!("LPAD({v}, 10, '0')"),
        6 => format!("DATEADD(MOD({v}, 3650) DAY TO DATE '2015-01-01')"),
        7 => format!("DATEADD({v} * 37 SECOND TO TIMESTAMP '2020-01-01 00:00:00.0000')"),
        _ => format!("MOD({v}, 2) = 0"),
    };
    format!("IIF(MOD(:r + {c}, 13) = 0, NULL, {value})")
}

/// The `EXECUTE BLOCK` that inserts WIDE's rows `lo..hi` (IDs
/// `lo + 1..=hi`).
pub fn wide_block(columns: u32, lo: u64, hi: u64) -> String {
    let names: Vec<String> = (1..=columns).map(wide_column).collect();
    let values: Vec<String> = (1..=columns).map(wide_value).collect();
    format!(
        "EXECUTE BLOCK AS\n\
         DECLARE r BIGINT = {lo};\n\
         BEGIN\n\
         WHILE (r < {hi}) DO BEGIN\n\
         INSERT INTO WIDE ({}) VALUES (\n{});\n\
         r = r + 1;\n\
         END\n\
         END",
        names.join(", "),
        values.join(",\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_heavy_rows_share_the_total() {
        // 2 GiB over 10,000 rows: two blobs of 107,374 bytes a row.
        assert_eq!(blob_bytes_per_row(10_000, 2048), 107_374);
        assert_eq!(blob_rows_per_chunk(10_000, 2048), 625);
        let block = blob_heavy_block(0, 625, 107_374);
        // 13 full pieces, then the 3,374 bytes left.
        assert!(block.contains("WHILE (i < 13)") && block.contains("RPAD(line, 3374, line)"));
        assert!(block.contains("WHILE (r < 625)"));
        assert_eq!(block, blob_heavy_block(0, 625, 107_374));
        assert!(!blob_heavy_block(0, 1, 16_000).contains("RPAD(line, 0,"));
    }

    #[test]
    fn wide_has_every_type_and_the_columns_asked_for() {
        let create = wide_create_sql(500);
        assert_eq!(create.lines().count(), 501);
        for t in [
            "INTEGER,",
            "BIGINT",
            "NUMERIC(18, 4)",
            "DOUBLE PRECISION",
            "VARCHAR(40)",
            "CHAR(10)",
            "DATE",
            "TIMESTAMP",
            "BOOLEAN",
        ] {
            assert!(create.contains(t), "{t}");
        }
        assert!(create.contains("C0500 ") && !create.contains("C0501"));
        let block = wide_block(500, 10, 20);
        assert_eq!(block.matches("IIF(MOD(:r + ").count(), 499);
        assert_eq!(block, wide_block(500, 10, 20));
    }
}
