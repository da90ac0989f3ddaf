//! SQL identifiers and literals built into the text of queries.

/// A delimited identifier: always quoted, so lower case, spaces and
/// reserved words survive, with embedded quotes doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
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
    fn quotes_are_doubled() {
        assert_eq!(
            quote_identifier(r#"My "odd" table"#),
            r#""My ""odd"" table""#
        );
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
