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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_doubled() {
        assert_eq!(
            quote_identifier(r#"My "odd" table"#),
            r#""My ""odd"" table""#
        );
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
