//! SQL identifiers and literals built into the text of queries, and the
//! one rule by which every option takes a name (`--tables`, `--exclude`,
//! `--views`, `--columns`, `--where`'s table, `--split-by`): as in SQL, an
//! unquoted name is upper-cased (`stock` is `STOCK`) and a double-quoted
//! one is exact (`"stock"`, with `""` for a quote in it).

/// A delimited identifier: always quoted, so lower case, spaces and
/// reserved words survive, with embedded quotes doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An unquoted name as SQL reads it: upper-cased.
pub fn unquoted(name: &str) -> String {
    name.to_uppercase()
}

/// An unquoted SQL identifier: a letter, then letters, digits, `_`, `$`.
pub(crate) fn is_plain_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// How to write a stored name so that the rule gives it back: as it is
/// when unquoted would (`STOCK`, `S_I_ID`), else double-quoted (`"stock"`,
/// `"Mixed Case"`).
pub fn sql_name(stored: &str) -> String {
    if is_plain_name(stored) && unquoted(stored) == stored {
        stored.to_string()
    } else {
        quote_identifier(stored)
    }
}

/// `text` as one shell word: bare when nothing in it is special to a
/// shell, else in single quotes (`'"stock"'`).
pub fn shell_word(text: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-.,:%/=+@".contains(c);
    if !text.is_empty() && text.chars().all(bare) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The hint for a name that names nothing when `other` differs from it
/// only in case: how the rule names that one, and what to type (` (a
/// quoted name is exact: did you mean STOCK? --tables STOCK)`). `quoted`:
/// whether the name was written in quotes; `typed` turns the name as it
/// must be written into what to type.
pub fn case_hint(other: &str, quoted: bool, typed: impl Fn(&str) -> String) -> String {
    let why = match quoted {
        true => "a quoted name is exact",
        false => "unquoted names are upper-cased, as in SQL",
    };
    let name = sql_name(other);
    format!(
        " ({why}: did you mean {}? {})",
        printable(&name),
        printable(&typed(&name))
    )
}

/// A string literal with embedded apostrophes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A name from the database as it may be shown on a terminal: control
/// characters (ESC, newline, …) escaped as `\u{1b}`, `\n`, so a table
/// name cannot move the cursor, clear the screen or forge output lines.
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return name.into();
    }
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(printable("ORDERS"), "ORDERS");
        assert_eq!(printable("T\x1b[2J\nX"), "T\\u{1b}[2J\\nX");
        assert_eq!(printable("日本"), "日本");
    }

    #[test]
    fn names_are_written_as_the_rule_gives_them_back() {
        assert_eq!(sql_name("STOCK"), "STOCK");
        assert_eq!(sql_name("S_I_ID$2"), "S_I_ID$2");
        assert_eq!(sql_name("stock"), "\"stock\"");
        assert_eq!(sql_name("Mixed Case"), "\"Mixed Case\"");
        assert_eq!(sql_name("2X"), "\"2X\"");
        assert_eq!(sql_name("A\"B"), "\"A\"\"B\"");
        assert_eq!(unquoted("s_i_id"), "S_I_ID");
        assert_eq!(shell_word("STOCK"), "STOCK");
        assert_eq!(shell_word("\"stock\""), "'\"stock\"'");
        assert_eq!(shell_word("\"it's\""), "'\"it'\\''s\"'");
    }

    #[test]
    fn a_name_that_differs_only_in_case_is_hinted_as_it_must_be_written() {
        let typed = |name: &str| format!("--tables {}", shell_word(name));
        assert_eq!(
            case_hint("STOCK", true, typed),
            " (a quoted name is exact: did you mean STOCK? --tables STOCK)"
        );
        assert_eq!(
            case_hint("Orders", false, typed),
            " (unquoted names are upper-cased, as in SQL: did you mean \"Orders\"? \
             --tables '\"Orders\"')"
        );
    }

    #[test]
    fn quotes_are_doubled() {
        assert_eq!(
            quote_identifier(r#"My "odd" table"#),
            r#""My ""odd"" table""#
        );
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
