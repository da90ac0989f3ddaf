//! Firebird SQL and PSQL text as tokens, each with the line it starts
//! on (what an [`Untranslated`](crate::Untranslated) points at).
//!
//! Unquoted identifiers are folded to upper case, as Firebird folds
//! them; keywords are such identifiers (Firebird reserves few words, so
//! the parser decides by position, not the lexer).

use crate::Untranslated;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An unquoted identifier or keyword, upper-cased.
    Word(String),
    /// A `"quoted"` identifier, as written.
    Quoted(String),
    /// A string literal's text, quotes undoubled.
    Str(String),
    /// An `X'..'` literal's hex digits.
    Hex(String),
    Number(String),
    /// Punctuation and operators: `(`, `||`, `<=`, `:`, ...
    Sym(&'static str),
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

const SYMBOLS: [&str; 26] = [
    "||", "<>", "!=", "^=", "~=", "<=", ">=", "!<", "!>", "^<", "^>", "~<", "~>", "(", ")", ",",
    ";", ".", "+", "-", "*", "/", "=", "<", ">", ":",
];
const MORE_SYMBOLS: [&str; 3] = ["[", "]", "?"];

pub fn tokenize(source: &str) -> Result<Vec<Token>, Untranslated> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    let fail = |line: u32, what: &str| Untranslated {
        construct: what.to_string(),
        line,
        reason: "the text does not read as Firebird SQL".to_string(),
    };
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= bytes.len() {
                    return Err(fail(start, "an unclosed comment"));
                }
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if bytes[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            continue;
        }
        let start_line = line;
        let push = |tokens: &mut Vec<Token>, tok: Tok| {
            tokens.push(Token {
                tok,
                line: start_line,
            })
        };
        if c == b'\'' || ((c == b'x' || c == b'X') && bytes.get(i + 1) == Some(&b'\'')) {
            let hex = c != b'\'';
            if hex {
                i += 1;
            }
            i += 1;
            let mut text = String::new();
            let mut from = i;
            loop {
                let Some(&b) = bytes.get(i) else {
                    return Err(fail(start_line, "an unclosed string"));
                };
                if b == b'\'' {
                    text.push_str(&source[from..i]);
                    if bytes.get(i + 1) == Some(&b'\'') {
                        text.push('\'');
                        i += 2;
                        from = i;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if b == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            push(
                &mut tokens,
                if hex { Tok::Hex(text) } else { Tok::Str(text) },
            );
            continue;
        }
        if c == b'"' {
            i += 1;
            let mut text = String::new();
            let mut from = i;
            loop {
                let Some(&b) = bytes.get(i) else {
                    return Err(fail(start_line, "an unclosed quoted name"));
                };
                if b == b'"' {
                    text.push_str(&source[from..i]);
                    if bytes.get(i + 1) == Some(&b'"') {
                        text.push('"');
                        i += 2;
                        from = i;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
            push(&mut tokens, Tok::Quoted(text));
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let from = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            push(&mut tokens, Tok::Number(source[from..i].to_string()));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let from = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
            {
                i += 1;
            }
            push(&mut tokens, Tok::Word(source[from..i].to_ascii_uppercase()));
            continue;
        }
        let rest = &source[i..];
        let Some(sym) = SYMBOLS
            .iter()
            .chain(MORE_SYMBOLS.iter())
            .find(|s| rest.starts_with(**s))
        else {
            let ch = rest.chars().next().unwrap_or(' ');
            return Err(fail(start_line, &format!("the character {ch:?}")));
        };
        i += sym.len();
        push(&mut tokens, Tok::Sym(sym));
    }
    tokens.push(Token {
        tok: Tok::End,
        line,
    });
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn words_fold_quoted_names_and_strings_keep_their_case() {
        assert_eq!(
            toks(r#"value "Mixed" 'it''s' <= 1.5e3 ||"#),
            [
                Tok::Word("VALUE".into()),
                Tok::Quoted("Mixed".into()),
                Tok::Str("it's".into()),
                Tok::Sym("<="),
                Tok::Number("1.5e3".into()),
                Tok::Sym("||"),
                Tok::End
            ]
        );
    }

    #[test]
    fn comments_are_skipped_and_lines_counted() {
        let t = tokenize("a /* one\ntwo */ -- x\n b").unwrap();
        assert_eq!(t[1].tok, Tok::Word("B".into()));
        assert_eq!(t[1].line, 3);
    }

    #[test]
    fn unclosed_text_is_refused_with_its_line() {
        assert_eq!(tokenize("\n'abc").unwrap_err().line, 2);
        assert!(tokenize("a /* b").is_err());
    }
}
