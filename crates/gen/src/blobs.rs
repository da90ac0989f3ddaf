//! BIG_BLOB: one table of very large blobs, to measure (and test) how much
//! memory an unload needs per byte of its largest value.
//!
//! | ID | TXT (BLOB SUB_TYPE TEXT, UTF8) | BIN (BLOB SUB_TYPE BINARY) |
//! |---|---|---|
//! | 1 | [`crate::GenOptions::blob_mb`] MiB of 64-byte lines, each with a comma, quotes and a line feed (CSV quotes it, JSON escapes it) | NULL |
//! | 2 | NULL | as many bytes of SHA-256 output: deterministic, and as incompressible as a photo |
//! | 3 | `tiny, "text"` | `00FF` |
//!
//! Row 3 alone (`--where "ID = 3"`) is the baseline an unload costs
//! without big values. The blobs are built by the engine with
//! `BLOB_APPEND` (Firebird 4.0.2 and later), which appends in place;
//! `||` would copy the whole blob at every step.

/// Rows the table gets.
pub const ROWS: u64 = 3;

pub fn create_sql() -> &'static str {
    "CREATE TABLE BIG_BLOB (\n\
     ID INTEGER NOT NULL PRIMARY KEY,\n\
     TXT BLOB SUB_TYPE TEXT CHARACTER SET UTF8,\n\
     BIN BLOB SUB_TYPE BINARY)"
}

/// One statement per row: each builds its blob and inserts it.
pub fn fill_sql(blob_mb: u32) -> Vec<String> {
    let bytes = blob_mb as u64 * 1024 * 1024;
    // 8,192 ASCII characters per append: the widest a UTF8 VARCHAR allows.
    let text_chunks = bytes / 8192;
    // 64 hashes of 32 bytes per append.
    let binary_chunks = bytes / 2048;
    vec![
        format!(
            "EXECUTE BLOCK AS\n\
             DECLARE b BLOB SUB_TYPE TEXT CHARACTER SET UTF8;\n\
             DECLARE line VARCHAR(64) CHARACTER SET UTF8;\n\
             DECLARE i INTEGER = 0;\n\
             BEGIN\n\
             WHILE (i < {text_chunks}) DO BEGIN\n\
             line = RPAD(LPAD(i, 8, '0') || ': a line, with \"quotes\" and a comma', 63, '.') \
             || ASCII_CHAR(10);\n\
             b = BLOB_APPEND(b, RPAD(line, 8192, line));\n\
             i = i + 1;\n\
             END\n\
             INSERT INTO BIG_BLOB (ID, TXT) VALUES (1, :b);\n\
             END"
        ),
        format!(
            "EXECUTE BLOCK AS\n\
             DECLARE b BLOB SUB_TYPE BINARY;\n\
             DECLARE chunk VARBINARY(2048);\n\
             DECLARE i INTEGER = 0;\n\
             DECLARE j INTEGER;\n\
             BEGIN\n\
             WHILE (i < {binary_chunks}) DO BEGIN\n\
             chunk = x'';\n\
             j = 0;\n\
             WHILE (j < 64) DO BEGIN\n\
             chunk = chunk || CRYPT_HASH(CAST(i * 64 + j AS VARCHAR(12)) USING SHA256);\n\
             j = j + 1;\n\
             END\n\
             b = BLOB_APPEND(b, chunk);\n\
             i = i + 1;\n\
             END\n\
             INSERT INTO BIG_BLOB (ID, BIN) VALUES (2, :b);\n\
             END"
        ),
        "INSERT INTO BIG_BLOB (ID, TXT, BIN) VALUES (3, 'tiny, \"text\"', x'00FF')".to_string(),
    ]
}
