//! SQL text a user wrote (`--where`, `--query`) cut into tokens, so that
//! fbunload can tell what is code and what is inside a string, a quoted
//! name or a comment before it builds that text into a query of its own.
//!
//! This is not a parser: it knows words, quoted names, string literals
//! (`'it''s'`, Firebird's `q'{...}'`), parentheses and `;`, and the depth
//! of parentheses each token sits at. That is enough to refuse text that
//! could escape the place it is put in (an unclosed quote, comment or
//! parenthesis, a second statement), and to find the words of a query's
//! top level (its `FROM`, a `GROUP BY`).

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A keyword or an unquoted name (or a number): letters, digits, `_`, `$`.
    Word,
    /// A double-quoted name.
    QuotedName,
    /// A string literal.
    Text,
    Open,
    Close,
    Semicolon,
    /// Any other character (`,`, `.`, `=`, `*`...).
    Symbol,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    /// The token as written.
    pub text: &'a str,
    /// Byte offset in the text.
    pub start: usize,
    /// Parentheses open around it (an `(` counts those outside it).
    pub depth: usize,
}

impl Token<'_> {
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }

    /// Whether it is the keyword or unquoted name `word`, in any case.
    pub fn is_word(&self, word: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(word)
    }
}

/// The tokens of `sql`, comments left out, after checking that every
/// quote, comment and parenthesis closes inside it and that it holds no
/// `;`. `what` names the text in messages ("the condition", "the query").
pub(crate) fn balanced_tokens<'a>(sql: &'a str, what: &str) -> Result<Vec<Token<'a>>, String> {
    if sql.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    let tokens = tokens(sql)?;
    let mut depth = 0usize;
    for token in &tokens {
        match token.kind {
            TokenKind::Open => depth += 1,
            TokenKind::Close if depth == 0 => {
                return Err(format!("a ) closes more than {what} opened"))
            }
            TokenKind::Close => depth -= 1,
            TokenKind::Semicolon => {
                return Err(format!("a ; ends the statement; give one {}", noun(what)))
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("a ( is not closed".into());
    }
    Ok(tokens)
}

/// "the query" → "query".
fn noun(what: &str) -> &str {
    what.strip_prefix("the ").unwrap_or(what)
}

/// Cuts `sql` into tokens; an error for a quote or `/*` comment that does
/// not close.
pub(crate) fn tokens(sql: &str) -> Result<Vec<Token<'_>>, String> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let kind = match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = sql[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = sql[i + 2..]
                    .find("*/")
                    .ok_or("a /* comment is not closed")?;
                i += 2 + end + 2;
                continue;
            }
            b'q' | b'Q' if bytes.get(i + 1) == Some(&b'\'') => {
                i = alternative_string_end(sql, i + 2).ok_or("a quote is not closed")?;
                TokenKind::Text
            }
            quote @ (b'\'' | b'"') => {
                // Doubled quotes inside are part of the text.
                let mut j = i + 1;
                loop {
                    match bytes.get(j) {
                        None => return Err("a quote is not closed".into()),
                        Some(&b) if b == quote && bytes.get(j + 1) == Some(&quote) => j += 2,
                        Some(&b) if b == quote => break,
                        Some(_) => j += 1,
                    }
                }
                i = j + 1;
                if quote == b'"' {
                    TokenKind::QuotedName
                } else {
                    TokenKind::Text
                }
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'$' => {
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
                {
                    i += 1;
                }
                TokenKind::Word
            }
            b'(' => {
                i += 1;
                TokenKind::Open
            }
            b')' => {
                i += 1;
                TokenKind::Close
            }
            b';' => {
                i += 1;
                TokenKind::Semicolon
            }
            _ => {
                i += sql[i..].chars().next().map_or(1, char::len_utf8);
                TokenKind::Symbol
            }
        };
        let token_depth = depth;
        match kind {
            TokenKind::Open => depth += 1,
            TokenKind::Close => depth = depth.saturating_sub(1),
            _ => {}
        }
        tokens.push(Token {
            kind,
            text: &sql[start..i],
            start,
            depth: if kind == TokenKind::Close {
                depth
            } else {
                token_depth
            },
        });
    }
    Ok(tokens)
}

/// The end of Firebird's `q'<delimiter>...<closing>'` literal whose
/// delimiter is at `at`: `q'{it's}'`, `q'!a!'`.
fn alternative_string_end(sql: &str, at: usize) -> Option<usize> {
    let open = sql[at..].chars().next()?;
    let close = match open {
        '(' => ')',
        '{' => '}',
        '[' => ']',
        '<' => '>',
        c => c,
    };
    let body = at + open.len_utf8();
    let end = sql[body..].find(&format!("{close}'"))?;
    Some(body + end + close.len_utf8() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str) -> Vec<(TokenKind, &str, usize)> {
        tokens(sql)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text, t.depth))
            .collect()
    }

    #[test]
    fn strings_names_and_comments_hide_what_is_inside_them() {
        use TokenKind::*;
        assert_eq!(
            kinds("a = 'x)' -- ; (\n AND \"b(\" /* ) */ IN (1)"),
            [
                (Word, "a", 0),
                (Symbol, "=", 0),
                (Text, "'x)'", 0),
                (Word, "AND", 0),
                (QuotedName, "\"b(\"", 0),
                (Word, "IN", 0),
                (Open, "(", 0),
                (Word, "1", 1),
                (Close, ")", 0),
            ]
        );
        assert_eq!(
            kinds("q'{it's (}' || Q'!x!'"),
            [
                (Text, "q'{it's (}'", 0),
                (Symbol, "|", 0),
                (Symbol, "|", 0),
                (Text, "Q'!x!'", 0)
            ]
        );
        assert_eq!(kinds("'it''s'"), [(Text, "'it''s'", 0)]);
    }

    #[test]
    fn unbalanced_text_is_refused_with_what_is_wrong() {
        let refused = |sql| balanced_tokens(sql, "the query").unwrap_err();
        assert_eq!(refused("a) OR (b"), "a ) closes more than the query opened");
        assert_eq!(refused("(a"), "a ( is not closed");
        assert_eq!(refused("'a"), "a quote is not closed");
        assert_eq!(refused("q'{a'"), "a quote is not closed");
        assert_eq!(refused("a /* b"), "a /* comment is not closed");
        assert_eq!(refused("a; b"), "a ; ends the statement; give one query");
        assert_eq!(refused(" \n"), "the query is empty");
        assert!(balanced_tokens("f(a, (b)) -- ) ;", "the query").is_ok());
    }
}
