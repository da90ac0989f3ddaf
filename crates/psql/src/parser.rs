//! A recursive-descent parser of Firebird's SQL expressions, SELECT
//! and PSQL, into [`ast`](crate::ast). What it does not read it refuses
//! with the construct and its line: a routine is translated whole or
//! not at all, so there is nothing to skip over.

use crate::ast::*;
use crate::lexer::{tokenize, Tok, Token};
use crate::Untranslated;

pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// In an EXECUTE STATEMENT's text: how many `?` markers were read
    /// (each is the parameter of its number, `?1`, `?2`, ...).
    markers: Option<u32>,
}

/// Why `IN AUTONOMOUS TRANSACTION` is reported.
pub const AUTONOMOUS: &str =
    "PostgreSQL has no autonomous transactions: its writes would commit or \
                              roll back with the caller's (dblink to the same database can do it \
                              by hand)";

type Result<T> = std::result::Result<T, Untranslated>;

/// Words that end an expression or a select item, so never an alias.
const NOT_ALIAS: &[&str] = &[
    "FROM",
    "INTO",
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "UNION",
    "ROWS",
    "PLAN",
    "FOR",
    "WITH",
    "JOIN",
    "LEFT",
    "RIGHT",
    "FULL",
    "INNER",
    "OUTER",
    "CROSS",
    "NATURAL",
    "ON",
    "USING",
    "AS",
    "DO",
    "OFFSET",
    "FETCH",
    "AND",
    "OR",
    "NOT",
    "THEN",
    "ELSE",
    "END",
    "WHEN",
    "IS",
    "IN",
    "BETWEEN",
    "LIKE",
    "STARTING",
    "CONTAINING",
    "SIMILAR",
    "ESCAPE",
    "ASC",
    "ASCENDING",
    "DESC",
    "DESCENDING",
    "NULLS",
    "COLLATE",
    "SET",
    "VALUES",
    "RETURNING",
    "SELECT",
    "EXCEPT",
    "INTERSECT",
    "LIMIT",
];

/// Firebird's left-associative binary operators, loosest first. A
/// level's operands are the next level's; between the levels sit what
/// binds in between: NOT and the predicates (`=`, IS, IN, LIKE, ...)
/// after AND, a sign after `*` and `/`, and `||`, which binds tighter
/// than arithmetic in Firebird, over single terms.
const BINARY: [&[(&str, BinaryOp)]; 5] = [
    &[("OR", BinaryOp::Or)],
    &[("AND", BinaryOp::And)],
    &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
    &[("*", BinaryOp::Mul), ("/", BinaryOp::Div)],
    &[("||", BinaryOp::Concat)],
];

impl Parser {
    pub fn new(source: &str) -> Result<Parser> {
        Ok(Parser {
            tokens: tokenize(source)?,
            pos: 0,
            markers: None,
        })
    }

    /// An EXECUTE STATEMENT's text: `?` is a positional parameter.
    pub fn with_markers(mut self) -> Self {
        self.markers = Some(0);
        self
    }

    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        let i = (self.pos + n).min(self.tokens.len() - 1);
        &self.tokens[i].tok
    }

    pub fn line(&self) -> u32 {
        self.tokens[self.pos].line
    }

    fn advance(&mut self) -> Tok {
        let t = self.tokens[self.pos].tok.clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Word(x) if x == w)
    }

    fn is_word_at(&self, n: usize, w: &str) -> bool {
        matches!(self.peek_at(n), Tok::Word(x) if x == w)
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if self.is_word(w) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn describe(&self) -> String {
        match self.peek() {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(q) => format!("\"{q}\""),
            Tok::Str(s) => format!("'{s}'"),
            Tok::Hex(h) => format!("X'{h}'"),
            Tok::Number(n) => n.clone(),
            Tok::Sym(s) => s.to_string(),
            Tok::End => "the end of the text".into(),
        }
    }

    /// A refusal at the current token.
    pub fn unexpected(&self, wanted: &str) -> Untranslated {
        Untranslated {
            construct: self.describe(),
            line: self.line(),
            reason: format!("expected {wanted}"),
        }
    }

    /// A construct read but not translated.
    pub fn unsupported(&self, construct: &str, reason: &str) -> Untranslated {
        Untranslated {
            construct: construct.to_string(),
            line: self.line(),
            reason: reason.to_string(),
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<()> {
        if self.eat_word(w) {
            Ok(())
        } else {
            Err(self.unexpected(w))
        }
    }

    fn expect_sym(&mut self, s: &str) -> Result<()> {
        if self.eat_sym(s) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{s}`")))
        }
    }

    /// Past the word a catalog keeps before an expression: `CHECK`,
    /// `DEFAULT`, `COMPUTED [BY]`.
    pub fn skip_lead_words(&mut self) {
        if self.is_word("CHECK") || self.is_word("DEFAULT") || self.is_word("WHERE") {
            self.advance();
        } else if self.eat_word("COMPUTED") {
            self.eat_word("BY");
        }
    }

    pub fn advance_pub(&mut self) {
        self.advance();
    }

    pub fn is_word_pub(&self, w: &str) -> bool {
        self.is_word(w)
    }

    pub fn eat_word_pub(&mut self, w: &str) -> bool {
        self.eat_word(w)
    }

    pub fn eat_sym_pub(&mut self, s: &str) -> bool {
        self.eat_sym(s)
    }

    pub fn expect_word_pub(&mut self, w: &str) -> Result<()> {
        self.expect_word(w)
    }

    pub fn expect_sym_pub(&mut self, s: &str) -> Result<()> {
        self.expect_sym(s)
    }

    pub fn number(&mut self) -> Result<i64> {
        let negative = self.eat_sym("-");
        match self.peek().clone() {
            Tok::Number(n) => {
                self.advance();
                let v: i64 = n.parse().map_err(|_| self.unexpected("a whole number"))?;
                Ok(if negative { -v } else { v })
            }
            _ => Err(self.unexpected("a number")),
        }
    }

    pub fn at_end(&self) -> bool {
        matches!(self.peek(), Tok::End)
    }

    pub fn expect_end(&mut self) -> Result<()> {
        while self.eat_sym(";") {}
        if self.at_end() {
            Ok(())
        } else {
            Err(self.unexpected("the end of the text"))
        }
    }

    pub fn name(&mut self) -> Result<Name> {
        match self.peek().clone() {
            Tok::Word(w) => {
                self.advance();
                Ok(Name {
                    text: w,
                    quoted: false,
                })
            }
            Tok::Quoted(q) => {
                self.advance();
                Ok(Name {
                    text: q,
                    quoted: true,
                })
            }
            _ => Err(self.unexpected("a name")),
        }
    }

    fn is_name(&self) -> bool {
        matches!(self.peek(), Tok::Word(_) | Tok::Quoted(_))
    }

    fn alias(&mut self) -> Result<Option<Name>> {
        // `FOR SELECT ... FROM t AS CURSOR c DO`: the loop's cursor.
        if self.is_word("AS") && self.is_word_at(1, "CURSOR") && self.is_word_at(3, "DO") {
            return Ok(None);
        }
        if self.eat_word("AS") {
            return self.name().map(Some);
        }
        match self.peek() {
            Tok::Word(w) if !NOT_ALIAS.contains(&w.as_str()) => self.name().map(Some),
            Tok::Quoted(_) => self.name().map(Some),
            _ => Ok(None),
        }
    }

    // ---- expressions ----

    pub fn expr(&mut self) -> Result<Expr> {
        self.binary(0)
    }

    /// One level of [`BINARY`]: its operators over the next level's
    /// operands, left to right.
    fn binary(&mut self, level: usize) -> Result<Expr> {
        let operand = |p: &mut Self| match level {
            0 => p.binary(1),
            1 => p.not_expr(),
            2 => p.binary(3),
            3 => p.unary(),
            _ => p.postfix(),
        };
        let mut left = operand(self)?;
        while let Some(op) = self.binary_operator(BINARY[level]) {
            let line = self.line();
            self.advance();
            let right = operand(self)?;
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                line,
            };
        }
        Ok(left)
    }

    fn binary_operator(&self, ops: &[(&str, BinaryOp)]) -> Option<BinaryOp> {
        let at = match self.peek() {
            Tok::Word(w) => w.as_str(),
            Tok::Sym(s) => s,
            _ => return None,
        };
        ops.iter().find(|(o, _)| *o == at).map(|(_, op)| *op)
    }

    fn not_expr(&mut self) -> Result<Expr> {
        if self.is_word("NOT") {
            let line = self.line();
            self.advance();
            let inner = self.not_expr()?;
            return Ok(Expr {
                kind: ExprKind::Unary(UnaryOp::Not, Box::new(inner)),
                line,
            });
        }
        self.predicate()
    }

    fn comparison(&self) -> Option<BinaryOp> {
        let Tok::Sym(s) = self.peek() else {
            return None;
        };
        Some(match *s {
            "=" => BinaryOp::Eq,
            "<>" | "!=" | "^=" | "~=" => BinaryOp::Ne,
            "<" | "!>" | "^>" | "~>" => {
                if *s == "<" {
                    BinaryOp::Lt
                } else {
                    BinaryOp::Le
                }
            }
            "<=" => BinaryOp::Le,
            ">" => BinaryOp::Gt,
            ">=" | "!<" | "^<" | "~<" => BinaryOp::Ge,
            _ => return None,
        })
    }

    fn predicate(&mut self) -> Result<Expr> {
        let left = self.additive()?;
        let line = self.line();
        let wrap = |kind| Expr { kind, line };
        if let Some(op) = self.comparison() {
            self.advance();
            for (word, all) in [("ANY", false), ("SOME", false), ("ALL", true)] {
                if self.is_word(word) && matches!(self.peek_at(1), Tok::Sym("(")) {
                    self.advance();
                    self.expect_sym("(")?;
                    let query = self.query()?;
                    self.expect_sym(")")?;
                    return Ok(wrap(ExprKind::Quantified(
                        op,
                        Box::new(left),
                        all,
                        Box::new(query),
                    )));
                }
            }
            let right = self.additive()?;
            return Ok(wrap(ExprKind::Binary(op, Box::new(left), Box::new(right))));
        }
        if self.eat_word("IS") {
            let negated = self.eat_word("NOT");
            if self.eat_word("NULL") {
                return Ok(wrap(ExprKind::IsNull(Box::new(left), negated)));
            }
            if self.eat_word("DISTINCT") {
                self.expect_word("FROM")?;
                let right = self.additive()?;
                return Ok(wrap(ExprKind::Distinct(
                    Box::new(left),
                    Box::new(right),
                    negated,
                )));
            }
            for (word, value) in [
                ("TRUE", Some(true)),
                ("FALSE", Some(false)),
                ("UNKNOWN", None),
            ] {
                if self.eat_word(word) {
                    return Ok(wrap(ExprKind::IsBool(Box::new(left), value, negated)));
                }
            }
            return Err(self.unexpected("NULL, DISTINCT FROM, TRUE, FALSE or UNKNOWN"));
        }
        let negated = if self.is_word("NOT")
            && matches!(self.peek_at(1), Tok::Word(w) if ["IN", "BETWEEN", "LIKE", "STARTING", "CONTAINING", "SIMILAR"].contains(&w.as_str()))
        {
            self.advance();
            true
        } else {
            false
        };
        if self.eat_word("IN") {
            self.expect_sym("(")?;
            let list = if self.is_word("SELECT") || self.is_word("WITH") {
                InList::Query(Box::new(self.query()?))
            } else {
                let mut values = vec![self.expr()?];
                while self.eat_sym(",") {
                    values.push(self.expr()?);
                }
                InList::Values(values)
            };
            self.expect_sym(")")?;
            return Ok(wrap(ExprKind::In(Box::new(left), list, negated)));
        }
        if self.eat_word("BETWEEN") {
            let low = self.additive()?;
            self.expect_word("AND")?;
            let high = self.additive()?;
            return Ok(wrap(ExprKind::Between(
                Box::new(left),
                Box::new(low),
                Box::new(high),
                negated,
            )));
        }
        let kind = if self.eat_word("LIKE") {
            Some(MatchKind::Like)
        } else if self.eat_word("STARTING") {
            self.eat_word("WITH");
            Some(MatchKind::StartingWith)
        } else if self.eat_word("CONTAINING") {
            Some(MatchKind::Containing)
        } else if self.eat_word("SIMILAR") {
            self.expect_word("TO")?;
            Some(MatchKind::SimilarTo)
        } else {
            None
        };
        if let Some(kind) = kind {
            let pattern = self.additive()?;
            let escape = if self.eat_word("ESCAPE") {
                Some(Box::new(self.additive()?))
            } else {
                None
            };
            return Ok(wrap(ExprKind::Match {
                kind,
                value: Box::new(left),
                pattern: Box::new(pattern),
                escape,
                negated,
            }));
        }
        if negated {
            return Err(self.unexpected("IN, BETWEEN, LIKE, STARTING, CONTAINING or SIMILAR"));
        }
        Ok(left)
    }

    fn additive(&mut self) -> Result<Expr> {
        self.binary(2)
    }

    fn unary(&mut self) -> Result<Expr> {
        let line = self.line();
        for (sym, op) in [("-", UnaryOp::Neg), ("+", UnaryOp::Plus)] {
            if self.eat_sym(sym) {
                let inner = self.unary()?;
                return Ok(Expr {
                    kind: ExprKind::Unary(op, Box::new(inner)),
                    line,
                });
            }
        }
        self.binary(4)
    }

    fn postfix(&mut self) -> Result<Expr> {
        let e = self.primary()?;
        if self.is_word("COLLATE") {
            return Err(self.unsupported("COLLATE", "a collation inside an expression"));
        }
        if self.eat_sym("[") {
            // The array is loaded with its bounds: the same subscripts
            // name the same element.
            if !matches!(e.kind, ExprKind::Column(_)) {
                return Err(self.unsupported(
                    "an element of an expression",
                    "only an array column's element is translated",
                ));
            }
            let mut subscripts = vec![self.expr()?];
            while self.eat_sym(",") {
                subscripts.push(self.expr()?);
            }
            if self.is_sym(":") {
                return Err(self.unsupported("an array slice", "not translated"));
            }
            self.expect_sym("]")?;
            let line = e.line;
            return Ok(Expr {
                kind: ExprKind::Element(Box::new(e), subscripts),
                line,
            });
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Expr> {
        let line = self.line();
        let wrap = |kind| Ok(Expr { kind, line });
        match self.peek().clone() {
            Tok::Number(n) => {
                self.advance();
                wrap(ExprKind::Number(n))
            }
            Tok::Str(s) => {
                self.advance();
                wrap(ExprKind::Str(s))
            }
            Tok::Hex(h) => {
                self.advance();
                wrap(ExprKind::Hex(h))
            }
            Tok::Sym("(") => {
                self.advance();
                if self.is_word("SELECT") || self.is_word("WITH") {
                    let q = self.query()?;
                    self.expect_sym(")")?;
                    return wrap(ExprKind::Subquery(Box::new(q)));
                }
                let e = self.expr()?;
                self.expect_sym(")")?;
                Ok(e)
            }
            Tok::Sym(":") => {
                self.advance();
                let name = self.name()?;
                if self.eat_sym(".") {
                    // `:NEW.X`, `:C.X` (a cursor's row): as without the colon.
                    return wrap(ExprKind::Column(vec![name, self.name()?]));
                }
                wrap(ExprKind::Param(name))
            }
            Tok::Sym("*") => {
                self.advance();
                wrap(ExprKind::Star(None))
            }
            Tok::Sym("?") => match self.markers {
                Some(n) => {
                    self.advance();
                    self.markers = Some(n + 1);
                    wrap(ExprKind::Param(Name {
                        text: format!("?{}", n + 1),
                        quoted: true,
                    }))
                }
                None => Err(self.unsupported("?", "a parameter marker")),
            },
            Tok::Word(w) => self.word_expr(&w, line),
            Tok::Quoted(_) => self.column(line),
            _ => Err(self.unexpected("an expression")),
        }
    }

    fn column(&mut self, line: u32) -> Result<Expr> {
        let mut parts = vec![self.name()?];
        while self.eat_sym(".") {
            if self.eat_sym("*") {
                if parts.len() != 1 {
                    return Err(self.unexpected("a name"));
                }
                return Ok(Expr {
                    kind: ExprKind::Star(parts.pop()),
                    line,
                });
            }
            parts.push(self.name()?);
        }
        Ok(Expr {
            kind: ExprKind::Column(parts),
            line,
        })
    }

    fn args(&mut self) -> Result<Vec<Expr>> {
        self.expect_sym("(")?;
        let mut args = Vec::new();
        if !self.is_sym(")") {
            args.push(self.expr()?);
            while self.eat_sym(",") {
                args.push(self.expr()?);
            }
        }
        self.expect_sym(")")?;
        Ok(args)
    }

    fn word_expr(&mut self, w: &str, line: u32) -> Result<Expr> {
        let wrap = |kind| Ok(Expr { kind, line });
        let next_is_paren = matches!(self.peek_at(1), Tok::Sym("("));
        let next_is_dot = matches!(self.peek_at(1), Tok::Sym("."));
        if next_is_dot {
            return self.column(line);
        }
        match w {
            "NULL" => {
                self.advance();
                return wrap(ExprKind::Null);
            }
            "TRUE" | "FALSE" => {
                self.advance();
                return wrap(ExprKind::Bool(w == "TRUE"));
            }
            "VALUE" if !next_is_paren => {
                self.advance();
                return wrap(ExprKind::Value);
            }
            "CURRENT_DATE"
            | "CURRENT_TIME"
            | "CURRENT_TIMESTAMP"
            | "LOCALTIME"
            | "LOCALTIMESTAMP"
            | "CURRENT_USER"
            | "USER"
            | "CURRENT_ROLE"
            | "CURRENT_CONNECTION"
            | "CURRENT_TRANSACTION"
            | "ROW_COUNT"
            | "SQLCODE"
            | "GDSCODE"
            | "SQLSTATE"
            | "INSERTING"
            | "UPDATING"
            | "DELETING" => {
                self.advance();
                if matches!(
                    w,
                    "CURRENT_TIME" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP"
                ) && self.is_sym("(")
                {
                    return Err(self.unsupported(w, "a precision on the current time"));
                }
                return wrap(ExprKind::Context(w.to_string()));
            }
            "DATE" | "TIME" | "TIMESTAMP" if matches!(self.peek_at(1), Tok::Str(_)) => {
                self.advance();
                let Tok::Str(s) = self.advance() else {
                    unreachable!()
                };
                let t = DataType::Builtin {
                    name: w.to_string(),
                    args: vec![],
                    charset: None,
                    sub_type: None,
                    time_zone: None,
                };
                return wrap(ExprKind::Cast(
                    Box::new(Expr {
                        kind: ExprKind::Str(s),
                        line,
                    }),
                    t,
                ));
            }
            "CASE" => {
                self.advance();
                return self.case(line);
            }
            "EXISTS" if next_is_paren => {
                self.advance();
                self.expect_sym("(")?;
                let q = self.query()?;
                self.expect_sym(")")?;
                return wrap(ExprKind::Exists(Box::new(q)));
            }
            "SINGULAR" if next_is_paren => {
                return Err(self.unsupported("SINGULAR", "no PostgreSQL counterpart"));
            }
            "NEXT" if self.is_word_at(1, "VALUE") => {
                self.advance();
                self.advance();
                self.expect_word("FOR")?;
                let g = self.name()?;
                return wrap(ExprKind::NextValue(g, None));
            }
            w if w.starts_with('_') && matches!(self.peek_at(1), Tok::Str(_)) => {
                self.advance();
                let Tok::Str(s) = self.advance() else {
                    unreachable!()
                };
                return wrap(ExprKind::Introduced(w[1..].to_string(), s));
            }
            _ => {}
        }
        if !next_is_paren {
            return self.column(line);
        }
        self.advance();
        match w {
            "CAST" => {
                self.expect_sym("(")?;
                let e = self.expr()?;
                self.expect_word("AS")?;
                let t = self.data_type()?;
                self.expect_sym(")")?;
                wrap(ExprKind::Cast(Box::new(e), t))
            }
            "EXTRACT" => {
                self.expect_sym("(")?;
                let part = self.name()?.text;
                self.expect_word("FROM")?;
                let e = self.expr()?;
                self.expect_sym(")")?;
                wrap(ExprKind::Extract(part, Box::new(e)))
            }
            "SUBSTRING" => {
                self.expect_sym("(")?;
                let e = self.expr()?;
                if self.eat_word("SIMILAR") {
                    return Err(self.unsupported("SUBSTRING SIMILAR", "no PostgreSQL counterpart"));
                }
                self.expect_word("FROM")?;
                let from = self.expr()?;
                let count = if self.eat_word("FOR") {
                    Some(Box::new(self.expr()?))
                } else {
                    None
                };
                self.expect_sym(")")?;
                wrap(ExprKind::Substring(Box::new(e), Box::new(from), count))
            }
            "TRIM" => {
                self.expect_sym("(")?;
                let mut spec = None;
                for s in ["BOTH", "LEADING", "TRAILING"] {
                    if self.eat_word(s) {
                        spec = Some(s.to_string());
                    }
                }
                let mut what = None;
                if !self.is_word("FROM") {
                    let e = self.expr()?;
                    if self.eat_word("FROM") {
                        what = Some(Box::new(e));
                        let target = self.expr()?;
                        self.expect_sym(")")?;
                        return wrap(ExprKind::Trim(spec, what, Box::new(target)));
                    }
                    if spec.is_some() {
                        return Err(self.unexpected("FROM"));
                    }
                    self.expect_sym(")")?;
                    return wrap(ExprKind::Trim(None, None, Box::new(e)));
                }
                self.expect_word("FROM")?;
                let target = self.expr()?;
                self.expect_sym(")")?;
                if what.is_none() && spec.is_none() {
                    return wrap(ExprKind::Trim(None, None, Box::new(target)));
                }
                wrap(ExprKind::Trim(spec, what, Box::new(target)))
            }
            "FIRST_DAY" | "LAST_DAY" => {
                self.expect_sym("(")?;
                self.expect_word("OF")?;
                let unit = self.name()?.text;
                self.expect_word("FROM")?;
                let x = self.expr()?;
                self.expect_sym(")")?;
                wrap(ExprKind::DayOf(w == "LAST_DAY", unit, Box::new(x)))
            }
            "OVERLAY" => {
                self.expect_sym("(")?;
                let mut args = vec![self.expr()?];
                self.expect_word("PLACING")?;
                args.push(self.expr()?);
                self.expect_word("FROM")?;
                args.push(self.expr()?);
                if self.eat_word("FOR") {
                    args.push(self.expr()?);
                }
                self.expect_sym(")")?;
                wrap(ExprKind::Function {
                    name: "OVERLAY".into(),
                    args,
                    distinct: false,
                    over: None,
                })
            }
            "POSITION" => {
                self.expect_sym("(")?;
                let a = self.additive()?;
                if self.eat_word("IN") {
                    let b = self.expr()?;
                    self.expect_sym(")")?;
                    return wrap(ExprKind::Position(Box::new(a), Box::new(b)));
                }
                self.expect_sym(",")?;
                let b = self.expr()?;
                if self.eat_sym(",") {
                    let start = self.expr()?;
                    self.expect_sym(")")?;
                    return wrap(ExprKind::Function {
                        name: "POSITION".into(),
                        args: vec![a, b, start],
                        distinct: false,
                        over: None,
                    });
                }
                self.expect_sym(")")?;
                wrap(ExprKind::Position(Box::new(a), Box::new(b)))
            }
            "DATEADD" => {
                self.expect_sym("(")?;
                // DATEADD(n unit TO x) or DATEADD(unit, n, x)
                if matches!(self.peek(), Tok::Word(u) if is_unit(u))
                    && matches!(self.peek_at(1), Tok::Sym(","))
                {
                    let unit = self.name()?.text;
                    self.expect_sym(",")?;
                    let n = self.expr()?;
                    self.expect_sym(",")?;
                    let x = self.expr()?;
                    self.expect_sym(")")?;
                    return wrap(ExprKind::DateAdd(unit, Box::new(n), Box::new(x)));
                }
                let n = self.additive()?;
                let unit = self.name()?.text;
                self.expect_word("TO")?;
                let x = self.expr()?;
                self.expect_sym(")")?;
                wrap(ExprKind::DateAdd(unit, Box::new(n), Box::new(x)))
            }
            "DATEDIFF" => {
                self.expect_sym("(")?;
                let unit = self.name()?.text;
                let (a, b) = if self.eat_word("FROM") {
                    let a = self.expr()?;
                    self.expect_word("TO")?;
                    (a, self.expr()?)
                } else {
                    self.expect_sym(",")?;
                    let a = self.expr()?;
                    self.expect_sym(",")?;
                    (a, self.expr()?)
                };
                self.expect_sym(")")?;
                wrap(ExprKind::DateDiff(unit, Box::new(a), Box::new(b)))
            }
            "GEN_ID" => {
                self.expect_sym("(")?;
                let g = self.name()?;
                self.expect_sym(",")?;
                let step = self.expr()?;
                self.expect_sym(")")?;
                wrap(ExprKind::NextValue(g, Some(Box::new(step))))
            }
            _ => {
                self.expect_sym("(")?;
                let mut args = Vec::new();
                let mut distinct = false;
                if self.eat_word("DISTINCT") {
                    distinct = true;
                } else {
                    self.eat_word("ALL");
                }
                if !self.is_sym(")") {
                    args.push(self.expr()?);
                    while self.eat_sym(",") {
                        args.push(self.expr()?);
                    }
                }
                self.expect_sym(")")?;
                let over = if self.eat_word("OVER") {
                    Some(self.window()?)
                } else {
                    None
                };
                wrap(ExprKind::Function {
                    name: w.to_string(),
                    args,
                    distinct,
                    over,
                })
            }
        }
    }

    fn window(&mut self) -> Result<Window> {
        self.expect_sym("(")?;
        if self.is_name() && !self.is_word("PARTITION") && !self.is_word("ORDER") {
            return Err(self.unsupported("a named window", "not translated"));
        }
        let mut partition = Vec::new();
        if self.eat_word("PARTITION") {
            self.expect_word("BY")?;
            partition.push(self.expr()?);
            while self.eat_sym(",") {
                partition.push(self.expr()?);
            }
        }
        let order = if self.eat_word("ORDER") {
            self.order_items()?
        } else {
            Vec::new()
        };
        let frame = self.is_word("ROWS") || self.is_word("RANGE");
        if frame {
            return Err(self.unsupported("a window frame", "not translated"));
        }
        self.expect_sym(")")?;
        Ok(Window {
            partition,
            order,
            frame,
        })
    }

    fn case(&mut self, line: u32) -> Result<Expr> {
        let operand = if self.is_word("WHEN") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_word("WHEN") {
            let w = self.expr()?;
            self.expect_word("THEN")?;
            whens.push((w, self.expr()?));
        }
        if whens.is_empty() {
            return Err(self.unexpected("WHEN"));
        }
        let otherwise = if self.eat_word("ELSE") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_word("END")?;
        Ok(Expr {
            kind: ExprKind::Case {
                operand,
                whens,
                otherwise,
            },
            line,
        })
    }

    pub fn data_type(&mut self) -> Result<DataType> {
        if self.eat_word("TYPE") {
            self.expect_word("OF")?;
            self.eat_word("COLUMN");
            let mut parts = vec![self.name()?];
            while self.eat_sym(".") {
                parts.push(self.name()?);
            }
            return Ok(DataType::TypeOf(parts));
        }
        let first = match self.peek() {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(_) => return Ok(DataType::Domain(self.name()?)),
            _ => return Err(self.unexpected("a type")),
        };
        let mut name = first.clone();
        let builtin = [
            "SMALLINT",
            "INTEGER",
            "INT",
            "BIGINT",
            "INT128",
            "FLOAT",
            "REAL",
            "DOUBLE",
            "DECIMAL",
            "NUMERIC",
            "DEC",
            "DECFLOAT",
            "DATE",
            "TIME",
            "TIMESTAMP",
            "CHAR",
            "CHARACTER",
            "VARCHAR",
            "NCHAR",
            "NATIONAL",
            "BLOB",
            "BOOLEAN",
            "BINARY",
            "VARBINARY",
        ];
        if !builtin.contains(&first.as_str()) {
            return Ok(DataType::Domain(self.name()?));
        }
        self.advance();
        if first == "DOUBLE" {
            self.expect_word("PRECISION")?;
            name = "DOUBLE PRECISION".into();
        }
        if (first == "CHARACTER" || first == "CHAR" || first == "NATIONAL")
            && self.is_word("VARYING")
        {
            self.advance();
            name = "VARCHAR".into();
        }
        if first == "NATIONAL" {
            self.eat_word("CHARACTER");
            self.eat_word("CHAR");
            if self.eat_word("VARYING") {
                name = "VARCHAR".into();
            } else if name != "VARCHAR" {
                name = "CHAR".into();
            }
        }
        let mut args = Vec::new();
        if self.eat_sym("(") {
            loop {
                match self.advance() {
                    Tok::Number(n) => args.push(n),
                    _ => return Err(self.unexpected("a number")),
                }
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_sym(")")?;
        }
        let mut time_zone = None;
        if (first == "TIME" || first == "TIMESTAMP")
            && (self.is_word("WITH") || self.is_word("WITHOUT"))
            && self.is_word_at(1, "TIME")
        {
            time_zone = Some(self.is_word("WITH"));
            self.advance();
            self.advance();
            self.expect_word("ZONE")?;
        }
        let mut sub_type = None;
        if first == "BLOB" {
            if self.eat_word("SUB_TYPE") {
                sub_type = Some(match self.advance() {
                    Tok::Word(w) => w,
                    Tok::Number(n) => n,
                    _ => return Err(self.unexpected("a sub-type")),
                });
            }
            if self.eat_word("SEGMENT") {
                self.expect_word("SIZE")?;
                self.advance();
            }
        }
        let mut charset = None;
        if self.is_word("CHARACTER") && self.is_word_at(1, "SET") {
            self.advance();
            self.advance();
            charset = Some(self.name()?.text);
        }
        if self.is_word("COLLATE") {
            return Err(self.unsupported("COLLATE", "a collation in a declaration"));
        }
        Ok(DataType::Builtin {
            name,
            args,
            charset,
            sub_type,
            time_zone,
        })
    }

    // ---- queries ----

    fn order_items(&mut self) -> Result<Vec<OrderItem>> {
        self.expect_word("BY")?;
        let mut items = Vec::new();
        loop {
            let expr = self.expr()?;
            if self.is_word("COLLATE") {
                return Err(self.unsupported("COLLATE", "a collation in ORDER BY"));
            }
            let descending = if self.eat_word("DESC") || self.eat_word("DESCENDING") {
                true
            } else {
                if !self.eat_word("ASC") {
                    self.eat_word("ASCENDING");
                }
                false
            };
            let nulls = if self.eat_word("NULLS") {
                if self.eat_word("FIRST") {
                    Some(true)
                } else {
                    self.expect_word("LAST")?;
                    Some(false)
                }
            } else {
                None
            };
            items.push(OrderItem {
                expr,
                descending,
                nulls,
            });
            if !self.eat_sym(",") {
                return Ok(items);
            }
        }
    }

    /// A SELECT, without INTO.
    pub fn query(&mut self) -> Result<Query> {
        let (q, into) = self.query_into()?;
        if !into.is_empty() {
            return Err(self.unsupported("INTO", "INTO outside PSQL"));
        }
        Ok(q)
    }

    /// A SELECT and its PSQL `INTO` targets (empty where it has none).
    pub fn query_into(&mut self) -> Result<(Query, Vec<Expr>)> {
        let line = self.line();
        let mut with = Vec::new();
        let mut recursive = false;
        if self.eat_word("WITH") {
            recursive = self.eat_word("RECURSIVE");
            loop {
                let name = self.name()?;
                let mut columns = Vec::new();
                if self.eat_sym("(") {
                    columns.push(self.name()?);
                    while self.eat_sym(",") {
                        columns.push(self.name()?);
                    }
                    self.expect_sym(")")?;
                }
                self.expect_word("AS")?;
                self.expect_sym("(")?;
                let query = self.query()?;
                self.expect_sym(")")?;
                with.push(Cte {
                    name,
                    columns,
                    query,
                });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        let mut into = Vec::new();
        let (mut body, first_skip) = self.set_expr(&mut into)?;
        let mut order = Vec::new();
        if self.eat_word("ORDER") {
            order = self.order_items()?;
        }
        let (mut limit, mut offset) = (None, None);
        if let Some((first, skip)) = first_skip {
            limit = first;
            offset = skip;
        }
        if self.eat_word("ROWS") {
            let from = self.additive()?;
            if self.eat_word("TO") {
                let to = self.additive()?;
                // ROWS m TO n: rows m..n, 1-based.
                let l = from.line;
                let one = || Expr {
                    kind: ExprKind::Number("1".into()),
                    line: l,
                };
                limit = Some(Expr {
                    kind: ExprKind::Binary(
                        BinaryOp::Add,
                        Box::new(Expr {
                            kind: ExprKind::Binary(
                                BinaryOp::Sub,
                                Box::new(to),
                                Box::new(from.clone()),
                            ),
                            line: l,
                        }),
                        Box::new(one()),
                    ),
                    line: l,
                });
                offset = Some(Expr {
                    kind: ExprKind::Binary(BinaryOp::Sub, Box::new(from), Box::new(one())),
                    line: l,
                });
            } else {
                limit = Some(from);
            }
        }
        if self.eat_word("OFFSET") {
            offset = Some(self.additive()?);
            if !self.eat_word("ROWS") {
                self.eat_word("ROW");
            }
        }
        if self.eat_word("FETCH") {
            if !self.eat_word("FIRST") {
                self.expect_word("NEXT")?;
            }
            limit = Some(self.additive()?);
            if !self.eat_word("ROWS") {
                self.expect_word("ROW")?;
            }
            self.expect_word("ONLY")?;
        }
        // FOR UPDATE alone says the rows may be changed through a cursor:
        // Firebird locks nothing for it. WITH LOCK locks each row read.
        if self.is_word("FOR") && self.is_word_at(1, "UPDATE") {
            self.advance();
            self.advance();
            if self.eat_word("OF") {
                self.name()?;
                while self.eat_sym(",") {
                    self.name()?;
                }
            }
        }
        let mut lock = None;
        if self.is_word("WITH") && self.is_word_at(1, "LOCK") {
            self.advance();
            self.advance();
            let skip = self.eat_word("SKIP");
            if skip {
                self.expect_word("LOCKED")?;
            }
            lock = Some(skip);
        }
        if self.eat_word("INTO") {
            if !into.is_empty() {
                return Err(self.unexpected("one INTO"));
            }
            into = self.targets()?;
        }
        if let SetExpr::Nested(_) = body {
            // keep as is
        }
        if order.is_empty()
            && limit.is_none()
            && offset.is_none()
            && with.is_empty()
            && lock.is_none()
        {
            if let SetExpr::Nested(inner) = body {
                let q = *inner;
                if q.with.is_empty() {
                    body = q.body;
                    return Ok((
                        Query {
                            with,
                            recursive,
                            body,
                            order: q.order,
                            limit: q.limit,
                            offset: q.offset,
                            lock: q.lock,
                            line,
                        },
                        into,
                    ));
                }
                body = SetExpr::Nested(Box::new(q));
            }
        }
        Ok((
            Query {
                with,
                recursive,
                body,
                order,
                limit,
                offset,
                lock,
                line,
            },
            into,
        ))
    }

    /// `:a, :b` or `a, b` (PSQL targets; `NEW.X` too).
    pub fn targets(&mut self) -> Result<Vec<Expr>> {
        let mut targets = Vec::new();
        loop {
            let line = self.line();
            let e = if self.eat_sym(":") {
                Expr {
                    kind: ExprKind::Param(self.name()?),
                    line,
                }
            } else {
                self.column(line)?
            };
            targets.push(e);
            if !self.eat_sym(",") {
                return Ok(targets);
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn set_expr(
        &mut self,
        into: &mut Vec<Expr>,
    ) -> Result<(SetExpr, Option<(Option<Expr>, Option<Expr>)>)> {
        let (mut left, mut first_skip) = self.select_core(into)?;
        while self.eat_word("UNION") {
            let all = self.eat_word("ALL");
            if !all {
                self.eat_word("DISTINCT");
            }
            let (right, fs) = self.select_core(into)?;
            if first_skip.is_some() || fs.is_some() {
                return Err(self.unsupported("FIRST/SKIP in a UNION", "not translated"));
            }
            left = SetExpr::Union(Box::new(left), Box::new(right), all);
            first_skip = None;
        }
        Ok((left, first_skip))
    }

    #[allow(clippy::type_complexity)]
    fn select_core(
        &mut self,
        into: &mut Vec<Expr>,
    ) -> Result<(SetExpr, Option<(Option<Expr>, Option<Expr>)>)> {
        if self.eat_sym("(") {
            let q = self.query()?;
            self.expect_sym(")")?;
            return Ok((SetExpr::Nested(Box::new(q)), None));
        }
        let line = self.line();
        self.expect_word("SELECT")?;
        let mut first = None;
        let mut skip = None;
        if self.eat_word("FIRST") {
            first = Some(self.limit_value()?);
        }
        if self.eat_word("SKIP") {
            skip = Some(self.limit_value()?);
        }
        let distinct = if self.eat_word("DISTINCT") {
            true
        } else {
            self.eat_word("ALL");
            false
        };
        let mut items = Vec::new();
        loop {
            let expr = self.expr()?;
            let alias = if matches!(expr.kind, ExprKind::Star(_)) {
                None
            } else {
                self.alias()?
            };
            items.push(SelectItem { expr, alias });
            if !self.eat_sym(",") {
                break;
            }
        }
        if self.eat_word("INTO") {
            *into = self.targets()?;
        }
        let mut from = Vec::new();
        if self.eat_word("FROM") {
            loop {
                from.push(self.table_ref()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        let filter = if self.eat_word("WHERE") {
            if self.is_word("CURRENT") && self.is_word_at(1, "OF") {
                return Err(self.unsupported("WHERE CURRENT OF", "cursors are not translated"));
            }
            Some(self.expr()?)
        } else {
            None
        };
        let mut group = Vec::new();
        if self.eat_word("GROUP") {
            self.expect_word("BY")?;
            group.push(self.expr()?);
            while self.eat_sym(",") {
                group.push(self.expr()?);
            }
        }
        let having = if self.eat_word("HAVING") {
            Some(self.expr()?)
        } else {
            None
        };
        if self.eat_word("PLAN") {
            // An access plan: a hint PostgreSQL plans without.
            self.skip_parens()?;
        }
        let first_skip = if first.is_some() || skip.is_some() {
            Some((first, skip))
        } else {
            None
        };
        Ok((
            SetExpr::Select(Box::new(Select {
                distinct,
                items,
                from,
                filter,
                group,
                having,
                into: Vec::new(),
                line,
            })),
            first_skip,
        ))
    }

    fn skip_parens(&mut self) -> Result<()> {
        while !self.is_sym("(") {
            if self.at_end() {
                return Err(self.unexpected("`(`"));
            }
            self.advance();
        }
        let mut depth = 0;
        loop {
            match self.advance() {
                Tok::Sym("(") => depth += 1,
                Tok::Sym(")") => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Tok::End => return Err(self.unexpected("`)`")),
                _ => {}
            }
        }
    }

    fn limit_value(&mut self) -> Result<Expr> {
        let line = self.line();
        match self.peek().clone() {
            Tok::Number(n) => {
                self.advance();
                Ok(Expr {
                    kind: ExprKind::Number(n),
                    line,
                })
            }
            Tok::Sym("(") | Tok::Sym(":") => self.primary(),
            _ => Err(self.unexpected("a number")),
        }
    }

    fn table_ref(&mut self) -> Result<TableRef> {
        let mut left = self.table_primary()?;
        loop {
            let kind = if self.eat_word("NATURAL") {
                JoinKind::Natural
            } else if self.eat_word("INNER") {
                JoinKind::Inner
            } else if self.eat_word("LEFT") {
                self.eat_word("OUTER");
                JoinKind::Left
            } else if self.eat_word("RIGHT") {
                self.eat_word("OUTER");
                JoinKind::Right
            } else if self.eat_word("FULL") {
                self.eat_word("OUTER");
                JoinKind::Full
            } else if self.eat_word("CROSS") {
                JoinKind::Cross
            } else if self.is_word("JOIN") {
                JoinKind::Inner
            } else {
                return Ok(left);
            };
            if kind == JoinKind::Natural {
                self.eat_word("INNER");
            }
            self.expect_word("JOIN")?;
            if self.is_word("LATERAL") {
                return Err(self.unsupported("LATERAL", "not translated"));
            }
            let right = self.table_primary()?;
            let mut on = None;
            let mut using = Vec::new();
            if matches!(
                kind,
                JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full
            ) {
                if self.eat_word("USING") {
                    self.expect_sym("(")?;
                    using.push(self.name()?);
                    while self.eat_sym(",") {
                        using.push(self.name()?);
                    }
                    self.expect_sym(")")?;
                } else {
                    self.expect_word("ON")?;
                    on = Some(self.expr()?);
                }
            }
            left = TableRef::Join {
                left: Box::new(left),
                kind,
                right: Box::new(right),
                on,
                using,
            };
        }
    }

    fn table_primary(&mut self) -> Result<TableRef> {
        if self.eat_sym("(") {
            if self.is_word("SELECT") || self.is_word("WITH") || self.is_sym("(") {
                let query = self.query()?;
                self.expect_sym(")")?;
                let alias = self.alias()?;
                let mut columns = Vec::new();
                if alias.is_some() && self.eat_sym("(") {
                    columns.push(self.name()?);
                    while self.eat_sym(",") {
                        columns.push(self.name()?);
                    }
                    self.expect_sym(")")?;
                }
                return Ok(TableRef::Derived {
                    query: Box::new(query),
                    alias,
                    columns,
                });
            }
            let inner = self.table_ref()?;
            self.expect_sym(")")?;
            return Ok(inner);
        }
        let line = self.line();
        let name = self.name()?;
        if self.is_sym(".") {
            return Err(self.unsupported("a package's procedure", "packages are not translated"));
        }
        if self.is_sym("(") {
            let args = self.args()?;
            let alias = self.alias()?;
            return Ok(TableRef::Procedure { name, args, alias });
        }
        let alias = self.alias()?;
        Ok(TableRef::Table { name, alias, line })
    }

    // ---- PSQL ----

    /// A trigger's or routine's body: `[AS] [DECLARE ...] BEGIN ... END`.
    pub fn body(&mut self) -> Result<Body> {
        self.eat_word("AS");
        let mut variables = Vec::new();
        let mut cursors = Vec::new();
        while self.is_word("DECLARE") {
            let line = self.line();
            self.advance();
            if self.is_word("PROCEDURE") || self.is_word("FUNCTION") {
                return Err(self.unsupported("a sub-routine", "not translated"));
            }
            self.eat_word("VARIABLE");
            let name = self.name()?;
            if self.is_word("SCROLL") {
                return Err(self.unsupported(
                    "a SCROLL cursor",
                    "PL/pgSQL cursors fetch forward only here",
                ));
            }
            if self.eat_word("NO") {
                self.expect_word("SCROLL")?;
            }
            if self.eat_word("CURSOR") {
                self.expect_word("FOR")?;
                self.expect_sym("(")?;
                let query = self.query()?;
                self.expect_sym(")")?;
                self.expect_sym(";")?;
                cursors.push(Cursor { name, query, line });
                continue;
            }
            let data_type = self.data_type()?;
            let not_null = if self.eat_word("NOT") {
                self.expect_word("NULL")?;
                true
            } else {
                false
            };
            let default = if self.eat_sym("=") || self.eat_word("DEFAULT") {
                Some(self.expr()?)
            } else {
                None
            };
            self.expect_sym(";")?;
            variables.push(Variable {
                name,
                data_type,
                default,
                not_null,
                line,
            });
        }
        self.expect_word("BEGIN")?;
        let block = self.block_rest()?;
        Ok(Body {
            variables,
            cursors,
            block,
        })
    }

    /// After `BEGIN`: statements, handlers, `END`.
    fn block_rest(&mut self) -> Result<Block> {
        let mut statements = Vec::new();
        let mut handlers = Vec::new();
        loop {
            if self.eat_word("END") {
                return Ok(Block {
                    statements,
                    handlers,
                });
            }
            if self.at_end() {
                return Err(self.unexpected("END"));
            }
            if self.is_word("WHEN") {
                handlers.push(self.handler()?);
                continue;
            }
            if !handlers.is_empty() {
                return Err(self.unexpected("WHEN or END after a handler"));
            }
            statements.push(self.statement()?);
        }
    }

    fn handler(&mut self) -> Result<Handler> {
        let line = self.line();
        self.expect_word("WHEN")?;
        let mut conditions = Vec::new();
        loop {
            if self.eat_word("ANY") {
                conditions.push(Condition::Any);
            } else if self.eat_word("EXCEPTION") {
                conditions.push(Condition::Exception(self.name()?));
            } else if self.eat_word("SQLCODE") {
                let negative = self.eat_sym("-");
                let Tok::Number(n) = self.advance() else {
                    return Err(self.unexpected("a number"));
                };
                let n: i64 = n.parse().map_err(|_| self.unexpected("a whole number"))?;
                conditions.push(Condition::SqlCode(if negative { -n } else { n }));
            } else if self.eat_word("GDSCODE") {
                conditions.push(Condition::GdsCode(self.name()?.text));
            } else if self.eat_word("SQLSTATE") {
                let Tok::Str(s) = self.advance() else {
                    return Err(self.unexpected("a string"));
                };
                conditions.push(Condition::SqlState(s));
            } else {
                return Err(self.unexpected("ANY, EXCEPTION, SQLCODE, GDSCODE or SQLSTATE"));
            }
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_word("DO")?;
        let body = Box::new(self.statement()?);
        Ok(Handler {
            conditions,
            body,
            line,
        })
    }

    pub fn statement(&mut self) -> Result<Stmt> {
        let line = self.line();
        let stmt = |kind| Ok(Stmt { kind, line });
        // A label: `name: WHILE/FOR`.
        if matches!(self.peek(), Tok::Word(_) | Tok::Quoted(_))
            && matches!(self.peek_at(1), Tok::Sym(":"))
        {
            let label = self.name()?;
            self.expect_sym(":")?;
            return match self.statement()? {
                Stmt {
                    kind: StmtKind::While(None, c, b),
                    line,
                } => Ok(Stmt {
                    kind: StmtKind::While(Some(label), c, b),
                    line,
                }),
                Stmt {
                    kind: StmtKind::ForSelect(None, q, i, c, b),
                    line,
                } => Ok(Stmt {
                    kind: StmtKind::ForSelect(Some(label), q, i, c, b),
                    line,
                }),
                Stmt {
                    kind: StmtKind::ForExecute(None, e, b),
                    line,
                } => Ok(Stmt {
                    kind: StmtKind::ForExecute(Some(label), e, b),
                    line,
                }),
                _ => Err(Untranslated {
                    construct: "a label".into(),
                    line,
                    reason: "only a loop takes a label".into(),
                }),
            };
        }
        let word = match self.peek() {
            Tok::Word(w) => w.clone(),
            Tok::Sym(":") => String::new(),
            Tok::Quoted(_) => String::new(),
            _ => return Err(self.unexpected("a statement")),
        };
        match word.as_str() {
            "BEGIN" => {
                self.advance();
                let block = self.block_rest()?;
                self.eat_sym(";");
                stmt(StmtKind::Block(block))
            }
            "IF" => {
                self.advance();
                let cond = self.expr()?;
                self.expect_word("THEN")?;
                let then = self.statement()?;
                let otherwise = if self.eat_word("ELSE") {
                    Some(Box::new(self.statement()?))
                } else {
                    None
                };
                stmt(StmtKind::If(cond, Box::new(then), otherwise))
            }
            "WHILE" => {
                self.advance();
                let cond = self.expr()?;
                self.expect_word("DO")?;
                let body = self.statement()?;
                stmt(StmtKind::While(None, cond, Box::new(body)))
            }
            "FOR" => {
                self.advance();
                if self.is_word("EXECUTE") && self.is_word_at(1, "STATEMENT") {
                    self.advance();
                    self.advance();
                    let execute = self.execute_statement()?;
                    if execute.into.is_empty() {
                        return Err(self.unexpected("INTO"));
                    }
                    self.expect_word("DO")?;
                    let body = self.statement()?;
                    return stmt(StmtKind::ForExecute(None, execute, Box::new(body)));
                }
                if !(self.is_word("SELECT") || self.is_word("WITH")) {
                    return Err(self.unsupported(
                        &format!("FOR {}", self.describe()),
                        "only FOR SELECT is translated",
                    ));
                }
                let (query, into) = self.query_into()?;
                let cursor = if self.eat_word("AS") {
                    self.expect_word("CURSOR")?;
                    Some(self.name()?)
                } else {
                    None
                };
                // Without INTO, the body reads the row as `cursor.column`.
                if into.is_empty() && cursor.is_none() {
                    return Err(self.unexpected("INTO"));
                }
                self.expect_word("DO")?;
                let body = self.statement()?;
                stmt(StmtKind::ForSelect(
                    None,
                    query,
                    into,
                    cursor,
                    Box::new(body),
                ))
            }
            "SELECT" | "WITH" => {
                let (query, into) = self.query_into()?;
                self.expect_sym(";")?;
                if into.is_empty() {
                    return Err(Untranslated {
                        construct: "SELECT".into(),
                        line,
                        reason: "a SELECT without INTO in PSQL".into(),
                    });
                }
                stmt(StmtKind::SelectInto(query, into))
            }
            "INSERT" => {
                self.advance();
                self.expect_word("INTO")?;
                let table = self.name()?;
                let mut columns = Vec::new();
                if self.eat_sym("(") {
                    columns.push(self.name()?);
                    while self.eat_sym(",") {
                        columns.push(self.name()?);
                    }
                    self.expect_sym(")")?;
                }
                let source = if self.eat_word("VALUES") {
                    InsertSource::Values(self.args()?)
                } else if self.eat_word("DEFAULT") {
                    self.expect_word("VALUES")?;
                    InsertSource::Default
                } else {
                    InsertSource::Query(Box::new(self.query()?))
                };
                let returning = self.returning()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Insert {
                    table,
                    columns,
                    source,
                    returning,
                })
            }
            "UPDATE" => {
                self.advance();
                if self.eat_word("OR") {
                    return self.update_or_insert(line);
                }
                let table = self.name()?;
                let alias = self.alias()?;
                self.expect_word("SET")?;
                let sets = self.assignments()?;
                let filter = self.where_clause()?;
                let returning = self.returning()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Update {
                    table,
                    alias,
                    sets,
                    filter,
                    returning,
                })
            }
            "DELETE" => {
                self.advance();
                self.expect_word("FROM")?;
                let table = self.name()?;
                let alias = self.alias()?;
                let filter = self.where_clause()?;
                let returning = self.returning()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Delete {
                    table,
                    alias,
                    filter,
                    returning,
                })
            }
            "SUSPEND" | "EXIT" | "BREAK" => {
                self.advance();
                self.expect_sym(";")?;
                stmt(match word.as_str() {
                    "SUSPEND" => StmtKind::Suspend,
                    "EXIT" => StmtKind::Exit,
                    _ => StmtKind::Leave(None),
                })
            }
            "LEAVE" | "CONTINUE" => {
                self.advance();
                let label = if self.is_sym(";") {
                    None
                } else {
                    Some(self.name()?)
                };
                self.expect_sym(";")?;
                stmt(if word == "LEAVE" {
                    StmtKind::Leave(label)
                } else {
                    StmtKind::Continue(label)
                })
            }
            "EXCEPTION" => {
                self.advance();
                if self.eat_sym(";") {
                    return stmt(StmtKind::Raise(None, None, Vec::new()));
                }
                let name = self.name()?;
                if self.eat_word("USING") {
                    let args = self.args()?;
                    self.expect_sym(";")?;
                    return stmt(StmtKind::Raise(Some(name), None, args));
                }
                let message = if self.is_sym(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect_sym(";")?;
                stmt(StmtKind::Raise(Some(name), message, Vec::new()))
            }
            "EXECUTE" => {
                self.advance();
                if self.eat_word("PROCEDURE") {
                    let name = self.name()?;
                    let mut args = Vec::new();
                    if self.eat_sym("(") {
                        if !self.is_sym(")") {
                            args.push(self.expr()?);
                            while self.eat_sym(",") {
                                args.push(self.expr()?);
                            }
                        }
                        self.expect_sym(")")?;
                    } else if !self.is_sym(";") && !self.is_word("RETURNING_VALUES") {
                        args.push(self.expr()?);
                        while self.eat_sym(",") {
                            args.push(self.expr()?);
                        }
                    }
                    let mut returning = Vec::new();
                    if self.eat_word("RETURNING_VALUES") {
                        let paren = self.eat_sym("(");
                        returning = self.targets()?;
                        if paren {
                            self.expect_sym(")")?;
                        }
                    }
                    self.expect_sym(";")?;
                    return stmt(StmtKind::ExecuteProcedure(name, args, returning));
                }
                if self.eat_word("STATEMENT") {
                    let execute = self.execute_statement()?;
                    self.expect_sym(";")?;
                    return stmt(StmtKind::ExecuteStatement(execute));
                }
                Err(self.unsupported(&format!("EXECUTE {}", self.describe()), "not translated"))
            }
            "POST_EVENT" => {
                self.advance();
                let e = self.expr()?;
                self.expect_sym(";")?;
                stmt(StmtKind::PostEvent(e))
            }
            "RETURN" => {
                self.advance();
                let e = self.expr()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Return(e))
            }
            "MERGE" => {
                self.advance();
                let merge = self.merge()?;
                stmt(StmtKind::Merge(Box::new(merge)))
            }
            "OPEN" | "CLOSE" => {
                self.advance();
                let cursor = self.name()?;
                self.expect_sym(";")?;
                stmt(if word == "OPEN" {
                    StmtKind::Open(cursor)
                } else {
                    StmtKind::Close(cursor)
                })
            }
            "FETCH" => {
                self.advance();
                if self.eat_word("NEXT") {
                    self.expect_word("FROM")?;
                } else if !self.is_name()
                    || self.is_word_at(1, "FROM")
                    || !self.is_word_at(1, "INTO")
                {
                    return Err(self.unsupported(
                        &format!("FETCH {}", self.describe()),
                        "PL/pgSQL cursors fetch forward only here",
                    ));
                }
                let cursor = self.name()?;
                self.expect_word("INTO")?;
                let into = self.targets()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Fetch(cursor, into))
            }
            "IN" if self.is_word_at(1, "AUTONOMOUS") => {
                self.advance();
                self.advance();
                self.expect_word("TRANSACTION")?;
                self.expect_word("DO")?;
                let body = self.statement()?;
                stmt(StmtKind::Autonomous(Box::new(body)))
            }
            "IN" | "DECLARE" => Err(self.unsupported(&word, "not translated")),
            _ => {
                let target = if self.eat_sym(":") {
                    Expr {
                        kind: ExprKind::Param(self.name()?),
                        line,
                    }
                } else {
                    self.column(line)?
                };
                if !self.eat_sym("=") {
                    return Err(self.unexpected("`=` (an assignment)"));
                }
                let value = self.expr()?;
                self.expect_sym(";")?;
                stmt(StmtKind::Assign(target, value))
            }
        }
    }

    fn where_clause(&mut self) -> Result<Filter> {
        if !self.eat_word("WHERE") {
            return Ok(Filter::All);
        }
        if self.is_word("CURRENT") && self.is_word_at(1, "OF") {
            self.advance();
            self.advance();
            return Ok(Filter::CurrentOf(self.name()?));
        }
        Ok(Filter::Where(self.expr()?))
    }

    /// After `UPDATE OR`: `INSERT INTO t [(cols)] VALUES (...) [MATCHING
    /// (cols)];`.
    fn update_or_insert(&mut self, line: u32) -> Result<Stmt> {
        self.expect_word("INSERT")?;
        self.expect_word("INTO")?;
        let table = self.name()?;
        let columns = if self.is_sym("(") {
            self.name_list()?
        } else {
            Vec::new()
        };
        self.expect_word("VALUES")?;
        let values = self.args()?;
        let matching = if self.eat_word("MATCHING") {
            self.name_list()?
        } else {
            Vec::new()
        };
        let returning = self.returning()?;
        self.expect_sym(";")?;
        Ok(Stmt {
            kind: StmtKind::UpdateOrInsert {
                table,
                columns,
                values,
                matching,
                returning,
            },
            line,
        })
    }

    /// `(a, b, c)`.
    fn name_list(&mut self) -> Result<Vec<Name>> {
        self.expect_sym("(")?;
        let mut names = vec![self.name()?];
        while self.eat_sym(",") {
            names.push(self.name()?);
        }
        self.expect_sym(")")?;
        Ok(names)
    }

    /// After `MERGE`: `INTO target [alias] USING source ON cond WHEN ...;`.
    fn merge(&mut self) -> Result<Merge> {
        self.expect_word("INTO")?;
        let target = self.name()?;
        let alias = if self.is_word("USING") {
            None
        } else {
            self.alias()?
        };
        self.expect_word("USING")?;
        let source = self.table_primary()?;
        self.expect_word("ON")?;
        let on = self.expr()?;
        let mut whens = Vec::new();
        while self.eat_word("WHEN") {
            let matched = !self.eat_word("NOT");
            self.expect_word("MATCHED")?;
            if self.eat_word("BY") {
                if self.is_word("SOURCE") {
                    return Err(self.unsupported(
                        "WHEN NOT MATCHED BY SOURCE",
                        "PostgreSQL 15's MERGE has no such clause",
                    ));
                }
                self.expect_word("TARGET")?;
            }
            let condition = if self.eat_word("AND") {
                Some(self.expr()?)
            } else {
                None
            };
            self.expect_word("THEN")?;
            let action = if matched && self.eat_word("UPDATE") {
                self.expect_word("SET")?;
                MergeAction::Update(self.assignments()?)
            } else if matched && self.eat_word("DELETE") {
                MergeAction::Delete
            } else if !matched && self.eat_word("INSERT") {
                let columns = if self.is_sym("(") {
                    self.name_list()?
                } else {
                    Vec::new()
                };
                self.expect_word("VALUES")?;
                MergeAction::Insert(columns, self.args()?)
            } else {
                return Err(self.unexpected(if matched {
                    "UPDATE or DELETE"
                } else {
                    "INSERT"
                }));
            };
            whens.push(MergeWhen {
                matched,
                condition,
                action,
            });
        }
        if whens.is_empty() {
            return Err(self.unexpected("WHEN"));
        }
        self.no_returning()?;
        self.expect_sym(";")?;
        Ok(Merge {
            target,
            alias,
            source,
            on,
            whens,
        })
    }

    /// `a = e, t.b = e`.
    fn assignments(&mut self) -> Result<Vec<(Name, Expr)>> {
        let mut sets = Vec::new();
        loop {
            let mut column = self.name()?;
            if self.eat_sym(".") {
                column = self.name()?;
            }
            self.expect_sym("=")?;
            sets.push((column, self.expr()?));
            if !self.eat_sym(",") {
                return Ok(sets);
            }
        }
    }

    /// After `EXECUTE STATEMENT`: the text, its parameters, `INTO`.
    fn execute_statement(&mut self) -> Result<Execute> {
        let sql = if self.eat_sym("(") {
            let e = self.expr()?;
            self.expect_sym(")")?;
            e
        } else {
            self.expr()?
        };
        let mut params = Vec::new();
        if self.eat_sym("(") {
            loop {
                let named = self.is_name()
                    && matches!(self.peek_at(1), Tok::Sym(":"))
                    && matches!(self.peek_at(2), Tok::Sym("="));
                if named {
                    let name = self.name()?;
                    self.advance();
                    self.advance();
                    params.push((Some(name), self.expr()?));
                } else {
                    params.push((None, self.expr()?));
                }
                if !self.eat_sym(",") {
                    break;
                }
            }
            self.expect_sym(")")?;
        }
        loop {
            if self.is_word("WITH") && self.is_word_at(1, "COMMON") {
                // The default: the caller's transaction.
                self.advance();
                self.advance();
                self.expect_word("TRANSACTION")?;
            } else if self.is_word("WITH") && self.is_word_at(1, "CALLER") {
                // A PostgreSQL function runs with the caller's privileges.
                self.advance();
                self.advance();
                self.expect_word("PRIVILEGES")?;
            } else if self.is_word("WITH") && self.is_word_at(1, "AUTONOMOUS") {
                return Err(self.unsupported(
                    "EXECUTE STATEMENT ... WITH AUTONOMOUS TRANSACTION",
                    AUTONOMOUS,
                ));
            } else if self.is_word("ON")
                || self.is_word("AS")
                || self.is_word("PASSWORD")
                || self.is_word("ROLE")
            {
                return Err(self.unsupported(
                    "EXECUTE STATEMENT ... ON EXTERNAL / AS USER",
                    "another database or user: PostgreSQL reaches one only through dblink",
                ));
            } else {
                break;
            }
        }
        let into = if self.eat_word("INTO") {
            self.targets()?
        } else {
            Vec::new()
        };
        Ok(Execute { sql, params, into })
    }

    /// `RETURNING e, ... INTO :a, ...`; `OLD.x`/`NEW.x` in it are
    /// refused (PostgreSQL 15's RETURNING has the new row only).
    fn returning(&mut self) -> Result<Option<Returning>> {
        if !self.eat_word("RETURNING") {
            return Ok(None);
        }
        let mut values = Vec::new();
        loop {
            if (self.is_word("OLD") || self.is_word("NEW"))
                && matches!(self.peek_at(1), Tok::Sym("."))
            {
                return Err(self.unsupported(
                    "RETURNING OLD./NEW.",
                    "PostgreSQL 15's RETURNING gives the new row only",
                ));
            }
            values.push(self.expr()?);
            if !self.eat_sym(",") {
                break;
            }
        }
        if !self.eat_word("INTO") {
            return Err(self.unexpected("INTO (RETURNING in PSQL returns into variables)"));
        }
        let into = self.targets()?;
        Ok(Some(Returning { values, into }))
    }

    fn no_returning(&self) -> Result<()> {
        if self.is_word("RETURNING") {
            return Err(self.unsupported("RETURNING", "not translated in PSQL"));
        }
        Ok(())
    }
}

fn is_unit(u: &str) -> bool {
    matches!(
        u,
        "YEAR" | "MONTH" | "WEEK" | "DAY" | "HOUR" | "MINUTE" | "SECOND" | "MILLISECOND"
    )
}
