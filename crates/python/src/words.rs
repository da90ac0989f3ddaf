//! The command line's words in a message, as Python's.
//!
//! Errors are made once, below the facade, in the command line's terms
//! (`--tables 'A%'`, `rerun with --decimal256`), because both front ends
//! share them. A Python caller never typed a flag, so before a message
//! becomes an exception every flag that has a keyword is written as that
//! keyword: `tables='A%'`, `decimal256=True`. A flag with no keyword stays
//! as it is.

use fbunload::FORMAT_OPTIONS;

/// Flags that take a value, and their keywords.
const VALUED: &[(&str, &str)] = &[
    ("tables", "tables"),
    ("exclude", "exclude"),
    ("views", "views"),
    ("columns", "columns"),
    ("where", "where"),
    ("charset", "charset"),
    ("max-rows", "max_rows"),
    ("max-bytes", "max_bytes"),
    ("client-lib", "client_lib"),
    ("split-by", "split_by"),
    ("memory", "memory_mb"),
    ("parallel", "parallel"),
    ("user", "user"),
    ("password", "password"),
    ("format", "format"),
    ("unit-pages", "unit_pages"),
    ("stall-timeout", "stall_timeout"),
    ("processes", "processes"),
    ("wire-crypt", "wire_crypt"),
    // fbunload.follow's.
    ("journal", "journal"),
    ("journal-live", "journal_live"),
    ("every", "every"),
    ("from", "from_"),
    ("until-idle", "until_idle"),
];

/// Switches, and the keyword argument that means the same.
const SWITCHES: &[(&str, &str)] = &[
    ("decimal256", "decimal256=True"),
    ("no-header", "header=False"),
    ("overwrite", "overwrite=True"),
    ("verify", "verify=True"),
    ("allow-inconsistent", "allow_inconsistent=True"),
    ("no-schema", "schema=False"),
    ("wire-compression", "wire_compression=True"),
    ("keep-keys", "keep_keys=True"),
    ("resumable", "resumable=True"),
    ("resume", "resume=True"),
    // A query is named by its key in `queries=` (or is read_sql's own).
    ("query", "query"),
    ("name", "the query's name"),
];

/// `message` with the flags that have a keyword written as keywords.
pub fn in_python_words(message: &str) -> String {
    // The login's flags in any spelling: a caller gave `user=`, `password=`.
    let message = message
        .replace("-u/-p", "user=/password=")
        .replace("-u/--user", "user=")
        .replace("-p/--password", "password=")
        .replace(" -d ", " --database ")
        .replace("choose another -o", "choose another output directory");
    let mut out = String::with_capacity(message.len());
    let mut rest = message.as_str();
    while let Some(at) = rest.find("--") {
        let starts_word = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        let flag_len = rest[at + 2..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len() - at - 2);
        let flag = &rest[at + 2..at + 2 + flag_len];
        out.push_str(&rest[..at]);
        rest = &rest[at + 2 + flag_len..];
        // The output options are the library's, with their keywords.
        let output = FORMAT_OPTIONS.iter().find(|o| o.flag == flag);
        let valued = VALUED
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, k)| k.to_string())
            .or_else(|| output.filter(|o| !o.switch).map(|o| o.keyword.to_string()));
        let switch = SWITCHES
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, k)| k.to_string())
            .or_else(|| {
                output
                    .filter(|o| o.switch)
                    .map(|o| format!("{}=True", o.keyword))
            });
        match (starts_word, valued, switch) {
            (true, Some(keyword), _) => {
                out.push_str(&keyword);
                rest = value_after(rest, &mut out, is_name);
            }
            (true, None, None) if flag == "database" => {
                out.push_str("database");
                rest = value_after(rest, &mut out, |v| v.contains([':', '/']));
            }
            // A directory, as messages print it.
            (true, None, None) if flag == "since" => {
                out.push_str("since");
                rest = value_after(rest, &mut out, |v| v.contains(['/', '\\']));
            }
            (true, None, Some(words)) => out.push_str(&words),
            _ => {
                out.push_str("--");
                out.push_str(flag);
            }
        }
    }
    out.push_str(rest);
    out
}

/// A value as messages print names and numbers (`WIDE`, `"Odd"`, `7`),
/// not a word of the sentence around it (`and`, `to`).
fn is_name(value: &str) -> bool {
    !value.is_empty() && !value.chars().any(|c| c.is_lowercase())
}

/// Writes `='value'` for the value that follows a flag in `rest` (` 'A%'`,
/// or a word `takes` accepts); returns what follows it.
fn value_after<'a>(rest: &'a str, out: &mut String, takes: impl Fn(&str) -> bool) -> &'a str {
    let Some(after_space) = rest.strip_prefix(' ') else {
        return rest;
    };
    if let Some(quoted) = after_space.strip_prefix('\'') {
        return match quoted.find('\'') {
            Some(end) => {
                out.push_str(&format!("='{}'", &quoted[..end]));
                &quoted[end + 1..]
            }
            None => rest,
        };
    }
    let end = after_space
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')'))
        .unwrap_or(after_space.len());
    // A trailing colon ends the subject (`--split-by WIDE: ...`).
    let value = after_space[..end].trim_end_matches(':');
    if !takes(value) {
        return rest;
    }
    match value.parse::<u64>() {
        Ok(_) => out.push_str(&format!("={value}")),
        Err(_) => out.push_str(&format!("='{value}'")),
    }
    &after_space[value.len()..]
}
