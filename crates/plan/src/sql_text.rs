//! SQL text a user wrote (`--where`, `--query`, Python's `where=` and
//! `read_sql`) cut into tokens, so that fbunload can tell what is code and
//! what is inside a string, a quoted name or a comment before it builds
//! that text into a query of its own.
//!
//! Every check fbunload makes on such text is only as good as this
//! tokenizer's agreement with Firebird's: a comment that ends earlier for
//! the engine than here hides code from the checks (`ID < 0 --\r) OR
//! (1=1` once read every row in every unit, since Firebird ends a `--`
//! comment at a carriage return too). So the rules below are the engine's
//! own lexer's (Firebird 5, `Parser::yylexAux`), byte for byte, not
//! those of SQL in general:
//!
//! - white space is tab, LF, form feed, CR and space; a `--` comment ends
//!   at a CR or an LF; a `/* */` comment must close;
//! - `'...'` and `"..."` (a quoted name) double the quote to hold one;
//! - `x'..'` is a hex string only when it holds hex digits and spaces, an
//!   even number of digits, and a closing quote; otherwise `x` is a word
//!   and the quote starts an ordinary string;
//! - `q'<c>...<c>'` takes any single *byte* `<c>` after the quote (`(`,
//!   `{`, `[`, `<` close with their partners) and ends at the first `<c>`
//!   followed by `'`; one that never closes is the word `q` and a string;
//!   a non-ASCII delimiter can never close (its byte is never followed by
//!   a quote in UTF-8);
//! - a word starts with an ASCII letter, `{` or `}` and goes on with
//!   those, digits, `_` and `$`; `_` starts a character set introducer
//!   (`_UTF8'..'`); every byte from 0x80 up, and `$` on its own, is
//!   punctuation, so `Жq'{a}'` is punctuation and then a `q'` string;
//! - a number starts with a digit, or a `.` before one, and is cut where
//!   Firebird cuts it: `1OR` is `1` and `OR`, and a malformed one (`1e`,
//!   `1.2.3`) is one byte of punctuation.
//!
//! Where Firebird joins tokens that this module keeps apart, the code and
//! the text between them are the same: adjacent strings (`'a' 'b'`, one
//! literal for the engine) are two tokens here, and a non-ASCII character
//! is one token here and one per byte there.
//!
//! This is not a parser: besides the tokens it knows the depth of
//! parentheses each token sits at and whether it is inside a subquery.
//! That is enough to refuse text that could escape the place it is put in
//! (an unclosed quote, comment or parenthesis, a second statement), to
//! find the words of a query's top level (its `FROM`, a `GROUP BY`), and
//! to blank out its comments ([`without_comments`]) so that no comment
//! can reach into the SQL fbunload puts around it.

use std::ops::Range;

use fbunload_decode::TextDecoder;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A keyword, an unquoted name, a character set introducer (`_UTF8`)
    /// or a number.
    Word,
    /// A double-quoted name.
    QuotedName,
    /// A string literal: `'..'`, `x'..'`, `q'{..}'`.
    Text,
    Open,
    Close,
    Semicolon,
    /// Any other character (`,`, `.`, `=`, `*`...) or operator (`<=`, `||`).
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
    /// Inside the parentheses of a subquery or derived table: a `(` whose
    /// first token is SELECT or WITH, and everything nested in it. Those
    /// parentheses themselves are not.
    pub in_subquery: bool,
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
    balanced(sql, what, tokens(sql))
}

/// [`balanced_tokens`] of a whole statement, whose trailing `;`s (after
/// its last other token, as a script or a tool ends a statement) are
/// left out: [`without_comments`], what Firebird is sent, blanks them.
pub(crate) fn statement_tokens<'a>(sql: &'a str, what: &str) -> Result<Vec<Token<'a>>, String> {
    let tokens = tokens(sql).map(|mut tokens| {
        let ends = trailing_semicolons(&tokens);
        tokens.truncate(tokens.len() - ends);
        tokens
    });
    balanced(sql, what, tokens)
}

/// How many of the last `tokens` are `;`s.
fn trailing_semicolons(tokens: &[Token<'_>]) -> usize {
    let kinds = tokens.iter().rev();
    kinds.take_while(|t| t.kind == TokenKind::Semicolon).count()
}

fn balanced<'a>(
    sql: &'a str,
    what: &str,
    tokens: Result<Vec<Token<'a>>, String>,
) -> Result<Vec<Token<'a>>, String> {
    if sql.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    let tokens = tokens?;
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
    if tokens.is_empty() {
        return Err(format!("{what} is only a comment"));
    }
    Ok(tokens)
}

/// "the query" → "query".
fn noun(what: &str) -> &str {
    what.strip_prefix("the ").unwrap_or(what)
}

/// Refuses what changes a sequence, which a read-only transaction does
/// not prevent: `GEN_ID(name, step)` with any step but a plain `0`, and
/// `NEXT VALUE FOR name`.
pub(crate) fn refuse_sequence_changes(tokens: &[Token<'_>]) -> Result<(), String> {
    let is = |i: usize, word: &str| tokens.get(i).is_some_and(|t| t.is_word(word));
    let kind = |i: usize| tokens.get(i).map(|t| t.kind);
    for (i, token) in tokens.iter().enumerate() {
        let reads_only = || {
            matches!(kind(i + 2), Some(TokenKind::Word | TokenKind::QuotedName))
                && tokens.get(i + 3).is_some_and(|t| t.text == ",")
                && tokens.get(i + 4).is_some_and(|t| t.text == "0")
                && kind(i + 5) == Some(TokenKind::Close)
        };
        if token.is_word("GEN_ID") && kind(i + 1) == Some(TokenKind::Open) && !reads_only() {
            return Err(
                "GEN_ID changes a sequence, even in fbunload's read-only transaction; \
                        only GEN_ID(name, 0), which reads it, is allowed"
                    .into(),
            );
        }
        if token.is_word("NEXT") && is(i + 1, "VALUE") && is(i + 2, "FOR") {
            return Err(
                "NEXT VALUE FOR changes a sequence, even in fbunload's read-only transaction; \
                 GEN_ID(name, 0) reads it without changing it"
                    .into(),
            );
        }
    }
    Ok(())
}

/// `sql` with every comment replaced by spaces, line breaks kept (so the
/// engine's line and column numbers still point into the user's text):
/// what fbunload sends instead of the text as given, so that whatever
/// the engine took for the end of a comment, only what this module saw
/// as code can be code. Trailing `;`s ([`statement_tokens`]) become
/// spaces too. Text that does not cut into tokens is returned as it is
/// (it has been refused before it is sent).
pub fn without_comments(sql: &str) -> String {
    let Ok(lexed) = lex(sql) else {
        return sql.to_string();
    };
    let mut bytes = sql.as_bytes().to_vec();
    let ends = trailing_semicolons(&lexed.tokens);
    let semicolons = lexed.tokens[lexed.tokens.len() - ends..].iter();
    for range in semicolons.map(|t| t.start..t.end()).chain(lexed.comments) {
        for byte in &mut bytes[range] {
            if !matches!(*byte, b'\r' | b'\n') {
                *byte = b' ';
            }
        }
    }
    // Whole characters were replaced by as many spaces as they had bytes.
    String::from_utf8(bytes).unwrap_or_else(|_| sql.to_string())
}

/// `sql` as fbunload sends it: comments blanked ([`without_comments`]),
/// and each string literal that holds non-ASCII text and has no character
/// set introducer of its own given one, so that the engine reads it as
/// the user meant. fbunload's connection character set is NONE (columns
/// arrive as stored, to be decoded exactly), and in NONE a literal's bytes
/// are taken as they are, whatever the column they meet: `W = 'café'`
/// would compare UTF-8 bytes with a WIN1252 column's. So a literal gets
/// the character set a client connected in `literals`' set (`--charset`,
/// UTF8 by default) would give it: its text in that set, as a hex string
/// with that set's introducer (`_WIN1252 X'636166E9'`, its line breaks
/// kept after it), or, for UTF8 and where that set cannot hold the text,
/// `_UTF8` before the literal as written. Adjacent strings (`'a' 'é'`),
/// one literal for the engine, take one introducer.
pub fn for_the_engine(sql: &str, literals: &TextDecoder) -> String {
    let blanked = without_comments(sql);
    let Ok(tokens) = tokens(&blanked) else {
        return blanked;
    };
    let is_plain = |t: &Token<'_>| t.kind == TokenKind::Text && t.text.starts_with('\'');
    let mut out = String::with_capacity(blanked.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i < tokens.len() {
        let first = &tokens[i];
        if first.kind != TokenKind::Text {
            i += 1;
            continue;
        }
        // The engine joins a string to the plain strings that follow it.
        let mut end = i + 1;
        if !first.text.starts_with(['q', 'Q']) {
            while tokens.get(end).is_some_and(is_plain) {
                end += 1;
            }
        }
        let run = &tokens[i..end];
        i = end;
        let hex = first.text.starts_with(['x', 'X']);
        let introduced = tokens[..i - run.len()]
            .last()
            .is_some_and(|t| t.kind == TokenKind::Word && t.text.starts_with('_'));
        if hex || introduced || run.iter().all(|t| t.text.is_ascii()) {
            continue;
        }
        let (start, stop) = (first.start, run[run.len() - 1].end());
        out.push_str(&blanked[copied..start]);
        copied = stop;
        let encoded = if literals.is_utf8() {
            None
        } else {
            literals.encode(
                &run.iter()
                    .map(|t| literal_value(t.text))
                    .collect::<String>(),
            )
        };
        match encoded {
            Some(bytes) => {
                out.push('_');
                out.push_str(literals.charset_name());
                out.push_str(" X'");
                for byte in bytes {
                    out.push_str(&format!("{byte:02X}"));
                }
                out.push('\'');
                out.extend(blanked[start..stop].chars().filter(|&c| c == '\n'));
            }
            None => {
                out.push_str("_UTF8 ");
                out.push_str(&blanked[start..stop]);
            }
        }
    }
    out.push_str(&blanked[copied..]);
    out
}

/// The text a string token stands for: `'it''s'` is `it's`,
/// `q'{it's}'` is `it's`.
fn literal_value(token: &str) -> String {
    if token.starts_with(['q', 'Q']) {
        // q'<c> ... <c>' with a one-byte <c>.
        return token[3..token.len() - 2].to_string();
    }
    token[1..token.len() - 1].replace("''", "'")
}

/// Where each token of `sql` lies, comments left out, as Firebird's lexer
/// cuts it (module docs): for tests that compare with the engine.
pub fn token_ranges(sql: &str) -> Result<Vec<Range<usize>>, String> {
    Ok(tokens(sql)?.iter().map(|t| t.start..t.end()).collect())
}

/// Where the `?` parameter markers of `sql` are (byte offsets), as
/// Firebird's lexer finds them: not inside a string, a quoted name or a
/// comment. An error for a quote or `/*` comment that does not close.
pub fn parameter_markers(sql: &str) -> Result<Vec<usize>, String> {
    Ok(tokens(sql)?
        .iter()
        .filter(|t| t.kind == TokenKind::Symbol && t.text == "?")
        .map(|t| t.start)
        .collect())
}

/// Cuts `sql` into tokens; an error for a quote or `/*` comment that does
/// not close.
pub(crate) fn tokens(sql: &str) -> Result<Vec<Token<'_>>, String> {
    lex(sql).map(|lexed| lexed.tokens)
}

/// The tokens of a text and where its comments are.
struct Lexed<'a> {
    tokens: Vec<Token<'a>>,
    comments: Vec<Range<usize>>,
}

/// Firebird's white space (`CHR_WHITE`): not vertical tab.
fn is_white(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

/// A byte that may start an unquoted word (`CHR_LETTER`).
fn starts_word(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'{' || b == b'}'
}

/// A byte that may go on with a word (`CHR_IDENT`).
fn continues_word(b: u8) -> bool {
    starts_word(b) || b.is_ascii_digit() || b == b'_' || b == b'$'
}

/// Operators of two characters, one token each.
const TWO_BYTE_OPERATORS: &[&[u8; 2]] = &[
    b"!<", b"!=", b"!>", b"<=", b"<>", b">=", b":=", b"^<", b"^=", b"^>", b"||", b"~<", b"~=",
    b"~>",
];

fn lex(sql: &str) -> Result<Lexed<'_>, String> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    // For each open parenthesis: whether it opened a subquery.
    let mut open: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let (kind, end) = if is_white(b) {
            i += 1;
            continue;
        } else if b == b'-' && next == Some(b'-') {
            let end = bytes[i..]
                .iter()
                .position(|&c| c == b'\r' || c == b'\n')
                .map_or(bytes.len(), |n| i + n);
            comments.push(i..end);
            i = end;
            continue;
        } else if b == b'/' && next == Some(b'*') {
            let end = sql[i + 2..]
                .find("*/")
                .ok_or("a /* comment is not closed")?;
            let end = i + 2 + end + 2;
            comments.push(i..end);
            i = end;
            continue;
        } else if b == b'\'' || b == b'"' {
            let kind = if b == b'"' {
                TokenKind::QuotedName
            } else {
                TokenKind::Text
            };
            (kind, quoted_end(bytes, i).ok_or("a quote is not closed")?)
        } else if let Some(end) = hex_string_end(bytes, i).or_else(|| q_string_end(bytes, i)) {
            (TokenKind::Text, end)
        } else if b == b'_' {
            (TokenKind::Word, word_end(bytes, i + 1))
        } else if let Some(end) = number_end(bytes, i) {
            (TokenKind::Word, end)
        } else if starts_word(b) {
            (TokenKind::Word, word_end(bytes, i + 1))
        } else {
            let kind = match b {
                b'(' => TokenKind::Open,
                b')' => TokenKind::Close,
                b';' => TokenKind::Semicolon,
                _ => TokenKind::Symbol,
            };
            let two = bytes.get(i..i + 2);
            let end = if TWO_BYTE_OPERATORS.iter().any(|op| Some(&op[..]) == two) {
                i + 2
            } else {
                // A whole character, for a byte from 0x80 up.
                i + sql[i..].chars().next().map_or(1, char::len_utf8)
            };
            (kind, end)
        };
        i = end;
        let in_subquery = open.iter().any(|&subquery| subquery);
        let depth = open.len();
        match kind {
            TokenKind::Open => {
                let first = first_token_after(bytes, end);
                let subquery = ["SELECT", "WITH"].iter().any(|w| {
                    first.is_some_and(|f| {
                        sql.get(f..f + w.len())
                            .is_some_and(|t| t.eq_ignore_ascii_case(w))
                            && !bytes.get(f + w.len()).is_some_and(|&c| continues_word(c))
                    })
                });
                open.push(subquery);
            }
            TokenKind::Close => {
                open.pop();
            }
            _ => {}
        }
        let (depth, in_subquery) = match kind {
            TokenKind::Close => (open.len(), open.iter().any(|&s| s)),
            _ => (depth, in_subquery),
        };
        tokens.push(Token {
            kind,
            text: &sql[start..end],
            start,
            depth,
            in_subquery,
        });
    }
    Ok(Lexed { tokens, comments })
}

/// Where the first token after `at` begins, past white space and
/// comments (whose errors the main loop reports).
fn first_token_after(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        match bytes.get(at..)? {
            [] => return None,
            [b, ..] if is_white(*b) => at += 1,
            [b'-', b'-', ..] => {
                at += bytes[at..].iter().position(|&c| c == b'\r' || c == b'\n')?;
            }
            [b'/', b'*', ..] => {
                at += 2 + bytes[at + 2..].windows(2).position(|w| w == b"*/")? + 2;
            }
            _ => return Some(at),
        }
    }
}

/// The end of a `'` string or `"` name starting at `at`; a doubled quote
/// is part of it.
fn quoted_end(bytes: &[u8], at: usize) -> Option<usize> {
    let quote = bytes[at];
    let mut j = at + 1;
    loop {
        match *bytes.get(j)? {
            b if b == quote && bytes.get(j + 1) == Some(&quote) => j += 2,
            b if b == quote => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The end of a hex string `x'0A 1b'` at `at`, if it is one. Firebird
/// reads the segments that follow it after white space or a comment
/// (`x'0A' '1b'`) as part of it, and takes none of them for hex unless
/// every segment holds only hex digits and spaces, an even number of
/// digits, and closes; the segments after the first are ordinary strings
/// here (they hold no quote, so they end where Firebird's do).
fn hex_string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if !matches!(bytes.get(at..at + 2)?, [b'x' | b'X', b'\'']) {
        return None;
    }
    let first_end = hex_segment_end(bytes, at + 1)?;
    let mut end = first_end;
    loop {
        match first_token_after(bytes, end) {
            Some(next) if next > end && bytes[next] == b'\'' => {
                end = hex_segment_end(bytes, next)?;
            }
            _ => return Some(first_end),
        }
    }
}

/// The end of `'0A 1b'` at `at`: hex digits and spaces, an even number of
/// digits, closed.
fn hex_segment_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut digits = 0;
    for (n, &b) in bytes[at + 1..].iter().enumerate() {
        match b {
            b'\'' => return (digits % 2 == 0).then_some(at + 1 + n + 1),
            b' ' => {}
            b if b.is_ascii_hexdigit() => digits += 1,
            _ => return None,
        }
    }
    None
}

/// The end of a `q'<c>...<c>'` string at `at`, if it is one and closes.
fn q_string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if !matches!(bytes.get(at..at + 2)?, [b'q' | b'Q', b'\'']) || at + 4 >= bytes.len() {
        return None;
    }
    let close = match bytes[at + 2] {
        b'(' => b')',
        b'{' => b'}',
        b'[' => b']',
        b'<' => b'>',
        other => other,
    };
    (at + 3..bytes.len() - 1)
        .find(|&j| bytes[j] == close && bytes[j + 1] == b'\'')
        .map(|j| j + 2)
}

fn word_end(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|&b| continues_word(b)) {
        at += 1;
    }
    at
}

/// The end of a number at `at`, cut as Firebird cuts it: `0x1F` (at most
/// 32 hex digits), or digits with at most one `.` and an exponent
/// (`1.5e-3`); one byte for a malformed one (`1e`, `1.2.3`); `None`
/// where no number starts.
fn number_end(bytes: &[u8], at: usize) -> Option<usize> {
    let digit = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let b = bytes[at];
    if !(b.is_ascii_digit() || (b == b'.' && digit(at + 1))) {
        return None;
    }
    if b == b'0'
        && matches!(bytes.get(at + 1), Some(b'x' | b'X'))
        && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        let digits = bytes[at + 2..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if digits <= 32 {
            return Some(at + 2 + digits);
        }
    }
    let (mut seen_digit, mut seen_point, mut exponent) = (false, false, false);
    let (mut exponent_sign, mut exponent_digit) = (false, false);
    let mut i = at;
    while let Some(&c) = bytes.get(i) {
        if exponent_digit && !c.is_ascii_digit() {
            break;
        }
        if exponent_sign && !c.is_ascii_digit() {
            return Some(at + 1);
        }
        if exponent {
            match c {
                b'+' | b'-' => exponent_sign = true,
                c if c.is_ascii_digit() => (exponent_sign, exponent_digit) = (true, true),
                _ => return Some(at + 1),
            }
        } else if c == b'.' {
            if seen_point {
                return Some(at + 1);
            }
            seen_point = true;
        } else if c.is_ascii_digit() {
            seen_digit = true;
        } else if (c == b'e' || c == b'E') && seen_digit {
            exponent = true;
        } else {
            break;
        }
        i += 1;
    }
    if exponent && !exponent_digit {
        // The text ended inside the exponent.
        return Some(at + 1);
    }
    Some(i)
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

    fn texts(sql: &str) -> Vec<&str> {
        tokens(sql).unwrap().into_iter().map(|t| t.text).collect()
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
                (Symbol, "||", 0),
                (Text, "Q'!x!'", 0)
            ]
        );
        assert_eq!(kinds("'it''s'"), [(Text, "'it''s'", 0)]);
        assert_eq!(kinds("\"a\"\"b\""), [(QuotedName, "\"a\"\"b\"", 0)]);
    }

    #[test]
    fn parameter_markers_are_the_question_marks_firebird_reads_as_code() {
        let at = |sql: &str| parameter_markers(sql).unwrap();
        // A `--` comment ends at a carriage return: the `?` after it counts.
        assert_eq!(at("SELECT 1 -- ?\r, ? FROM T"), [16]);
        // `it's` does not open a string inside q'{...}'.
        assert_eq!(at("SELECT q'{it's ?}', ? FROM T WHERE A = ?"), [20, 39]);
        assert_eq!(at("SELECT '?', \"?\", /* ? */ x'0A', ? FROM T"), [32]);
        assert!(parameter_markers("SELECT 'open ? FROM T").is_err());
    }

    #[test]
    fn a_dash_comment_ends_at_a_carriage_return_as_firebird_ends_it() {
        assert_eq!(texts("ID < 0 --\r) OR 1=1 OR (1=1"), {
            [
                "ID", "<", "0", ")", "OR", "1", "=", "1", "OR", "(", "1", "=", "1",
            ]
        });
        assert_eq!(texts("A --x\r\nB -- y\nC --"), ["A", "B", "C"]);
        // Vertical tab is not white space for Firebird: it is a token.
        assert_eq!(texts("A\x0bB"), ["A", "\x0b", "B"]);
        assert_eq!(texts("A\x0c/* \r\n */B"), ["A", "B"]);
    }

    #[test]
    fn string_forms_end_where_firebird_ends_them() {
        // Hex strings: hex digits and spaces, an even count, closed.
        assert_eq!(texts("x'41 4a' X''"), ["x'41 4a'", "X''"]);
        // Otherwise x is a word and the quote an ordinary string.
        assert_eq!(texts("x'4G'"), ["x", "'4G'"]);
        assert_eq!(texts("x'414'"), ["x", "'414'"]);
        assert_eq!(texts("x'41''--'"), ["x'41'", "'--'"]);
        // Segments after white space or a comment are part of it: one bad
        // segment makes x a word, as for the engine.
        assert_eq!(texts("x'41' /* */ '42'"), ["x'41'", "'42'"]);
        assert_eq!(texts("x'41'\r'a'"), ["x", "'41'", "'a'"]);
        assert_eq!(texts("x'41' 'zz'"), ["x", "'41'", "'zz'"]);
        assert_eq!(texts("x'41' "), ["x'41'"]);
        // q'': any byte delimits; brackets close with their partner.
        assert_eq!(
            texts("q'(a)'b' q'<'>'"),
            ["q'(a)'", "b", "' q'", "<", "'>'"]
        );
        assert_eq!(texts("q''''"), ["q''''"]);
        assert_eq!(texts("q'{a}' q'aba'"), ["q'{a}'", "q'aba'"]);
        // One that does not close is the word q and a string.
        assert_eq!(texts("q'{a' x"), ["q", "'{a'", "x"]);
        assert_eq!(texts("q''' x'"), ["q", "''' x'"]);
        // A non-ASCII delimiter never closes: its first byte is never
        // followed by a quote.
        assert_eq!(texts("q'Жa Ж' 'b'"), ["q", "'Жa Ж'", "'b'"]);
        // Introducers.
        assert_eq!(texts("_UTF8'a' N'b'"), ["_UTF8", "'a'", "N", "'b'"]);
    }

    #[test]
    fn words_and_numbers_are_cut_where_firebird_cuts_them() {
        // Bytes from 0x80 up are punctuation: q after one starts a string.
        assert_eq!(texts("Жq'{a}'"), ["Ж", "q'{a}'"]);
        assert_eq!(texts("aЖb"), ["a", "Ж", "b"]);
        assert_eq!(texts("{x} a$1_ $b"), ["{x}", "a$1_", "$", "b"]);
        assert_eq!(
            texts("1OR 2e3x 0x1FG .5"),
            ["1", "OR", "2e3", "x", "0x1F", "G", ".5"]
        );
        assert_eq!(
            texts("1e 1.2.3 1e-x"),
            ["1", "e", "1", ".", "2.3", "1", "e", "-", "x"]
        );
        assert_eq!(texts("1e--\rx"), ["1", "e", "x"]);
        assert_eq!(texts("a<>b||c!=d"), ["a", "<>", "b", "||", "c", "!=", "d"]);
    }

    #[test]
    fn subqueries_are_told_from_other_parentheses() {
        let scopes: Vec<(&str, bool)> =
            tokens("SELECT (SELECT MAX(x) FROM U), COALESCE(MAX(y), 0), ( /* */ with)")
                .unwrap()
                .into_iter()
                .map(|t| (t.text, t.in_subquery))
                .collect();
        let inside: Vec<&str> = scopes.iter().filter(|s| s.1).map(|s| s.0).collect();
        assert_eq!(
            inside,
            ["SELECT", "MAX", "(", "x", ")", "FROM", "U", "with"]
        );
    }

    #[test]
    fn comments_are_blanked_keeping_lines() {
        assert_eq!(
            without_comments("a --Ж\r) OR (\nb /* c\r\n */ 'x -- y'"),
            "a     \r) OR (\nb     \r\n    'x -- y'"
        );
        assert_eq!(without_comments("'open"), "'open");
    }

    #[test]
    fn non_ascii_literals_are_sent_in_a_character_set_that_holds_them() {
        let utf8 = TextDecoder::UTF8;
        let win1252 = TextDecoder::for_charset("WIN1252").unwrap();
        // ASCII literals, hex strings, introduced ones and names: as written.
        for sql in [
            "W = 'cafe'",
            "X'C3A9' = B",
            "W = _WIN1252 'café'",
            "\"Ж\" = 1",
        ] {
            assert_eq!(for_the_engine(sql, &utf8), sql);
            assert_eq!(for_the_engine(sql, &win1252), sql);
        }
        assert_eq!(
            for_the_engine("W = 'café' -- é\nOR W = q'{it's é}'", &utf8),
            "W = _UTF8 'café'      \nOR W = _UTF8 q'{it's é}'"
        );
        // Adjacent strings are one literal: one introducer, before the first.
        assert_eq!(
            for_the_engine("W = 'a' /* */ 'é' || 'b'", &utf8),
            "W = _UTF8 'a'       'é' || 'b'"
        );
        assert_eq!(
            for_the_engine("W = 'it''s' \n 'é'", &win1252),
            "W = _WIN1252 X'69742773E9'\n"
        );
        assert_eq!(
            for_the_engine("W STARTING WITH 'Mü' AND q'[é]' = W", &win1252),
            "W STARTING WITH _WIN1252 X'4DFC' AND _WIN1252 X'E9' = W"
        );
        // What WIN1252 cannot hold goes in UTF8, as written.
        assert_eq!(for_the_engine("W = 'Жé'", &win1252), "W = _UTF8 'Жé'");
        // Text that does not cut into tokens was refused before; as it is.
        assert_eq!(for_the_engine("'é", &utf8), "'é");
    }

    #[test]
    fn sequence_changes_are_refused() {
        let check = |sql| refuse_sequence_changes(&tokens(sql).unwrap());
        for bad in [
            "GEN_ID(S, 1) > 0",
            "gen_id (S, -0) = 1",
            "GEN_ID(S, 0 + 1) = 1",
            "ID = NEXT VALUE FOR S",
            "ID = next /* */ value\nfor S",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        for good in [
            "GEN_ID(S, 0) > 0",
            "GEN_ID(\"s\", 0) > 0",
            "'GEN_ID(S, 1)' = X",
            "\"GEN_ID\" = 1 -- NEXT VALUE FOR S",
            "NEXT_ID = 1",
        ] {
            assert!(check(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn unbalanced_text_is_refused_with_what_is_wrong() {
        let refused = |sql| balanced_tokens(sql, "the query").unwrap_err();
        assert_eq!(refused("a) OR (b"), "a ) closes more than the query opened");
        assert_eq!(refused("(a"), "a ( is not closed");
        assert_eq!(refused("'a"), "a quote is not closed");
        assert_eq!(refused("q'{a"), "a quote is not closed");
        assert_eq!(refused("a /* b"), "a /* comment is not closed");
        assert_eq!(refused("a; b"), "a ; ends the statement; give one query");
        assert_eq!(refused(" \n"), "the query is empty");
        assert_eq!(refused("-- x"), "the query is only a comment");
        assert_eq!(
            refused("a --\r) OR (b"),
            "a ) closes more than the query opened"
        );
        assert!(balanced_tokens("f(a, (b)) -- ) ;", "the query").is_ok());
        // A statement may end in semicolons; a condition may not.
        assert_eq!(refused("a;"), "a ; ends the statement; give one query");
        assert_eq!(
            statement_tokens("a ;; /* x */ ;", "the query")
                .unwrap()
                .len(),
            1
        );
        assert_eq!(without_comments("a ;-- x\n;"), "a      \n ");
        assert_eq!(without_comments("a ';' ;"), "a ';'  ");
        assert!(statement_tokens("a; b;", "the query").is_err());
    }
}
