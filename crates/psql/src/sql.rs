//! PostgreSQL text for Firebird expressions, types and queries. Each
//! construct either has a form that means the same in PostgreSQL or is
//! refused with an [`Untranslated`]: where Firebird's meaning differs
//! (LIKE's escape, CONTAINING's case, a timestamp plus days, EXTRACT's
//! integer result, 'NOW' frozen into a plan) the text here spells
//! Firebird's meaning out rather than copying the words.

use std::collections::{HashMap, HashSet};

use crate::ast::*;
use crate::{pg_name, quote, ExprContext, NameKind, Untranslated};

type Result<T> = std::result::Result<T, Untranslated>;

/// Where a PSQL name resolves and how a routine ends, for the PL/pgSQL
/// generator; empty for a plain expression or view.
#[derive(Default, Clone)]
pub struct Scope {
    /// Firebird variable or parameter name → its PostgreSQL reference.
    pub variables: HashMap<String, String>,
    /// In a trigger: `NEW`/`OLD` are records, INSERTING etc. read TG_OP.
    pub trigger: bool,
    /// ROW_COUNT is read: DML statements record it.
    pub row_count: bool,
    /// Inside an SQL statement: a bare name is a column where the
    /// statement's tables have one (`#variable_conflict use_column`),
    /// a `:name` always the variable.
    pub sql: bool,
    /// Firebird variable or parameter name → its PostgreSQL type, so
    /// that date arithmetic on it is Firebird's (a timestamp plus days).
    pub variable_types: HashMap<String, String>,
    /// A `FOR SELECT ... AS CURSOR c` loop's cursor name → the record
    /// its rows are read into (`c.column` in the loop).
    pub cursor_rows: HashMap<String, String>,
}

pub struct Gen<'c, 'a> {
    pub ctx: &'c ExprContext<'a>,
    pub scope: Scope,
    /// Names of the CTEs in reach: not tables.
    ctes: Vec<HashSet<String>>,
    derived: std::cell::Cell<u32>,
    /// The next expression is an operand of `||` (see [`Gen::branches`]).
    pad: std::cell::Cell<bool>,
}

pub fn refuse(construct: &str, line: u32, reason: &str) -> Untranslated {
    Untranslated {
        construct: construct.to_string(),
        line,
        reason: reason.to_string(),
    }
}

fn string_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// What kind of time an expression is, where its words say so (a
/// column's type is not known here).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Temporal {
    Date,
    Time,
    Timestamp,
}

impl<'c, 'a> Gen<'c, 'a> {
    pub fn new(ctx: &'c ExprContext<'a>) -> Self {
        Gen {
            ctx,
            scope: Scope::default(),
            ctes: Vec::new(),
            derived: std::cell::Cell::new(0),
            pad: std::cell::Cell::new(false),
        }
    }

    fn name(&self, kind: NameKind, name: &Name) -> String {
        (self.ctx.names)(kind, &name.text)
    }

    fn plain(&self, name: &Name) -> String {
        quote(&pg_name(&name.text))
    }

    /// An operand: in parentheses unless it is one term.
    fn operand(&self, e: &Expr) -> Result<String> {
        let text = self.expr(e)?;
        Ok(if is_term(e) {
            text
        } else {
            format!("({text})")
        })
    }

    /// An operand of IS, IN, BETWEEN, LIKE: bare where it binds tighter
    /// than they do (arithmetic, `||`).
    fn predicate_operand(&self, e: &Expr) -> Result<String> {
        let text = self.expr(e)?;
        Ok(if precedence(e) >= 60 {
            text
        } else {
            format!("({text})")
        })
    }

    pub fn expr(&self, e: &Expr) -> Result<String> {
        let line = e.line;
        let pad = self.pad.replace(false);
        Ok(match &e.kind {
            ExprKind::Number(n) => n.clone(),
            ExprKind::Str(s) => string_literal(s),
            ExprKind::Hex(h) => format!("'\\x{h}'::bytea"),
            ExprKind::Null => "NULL".into(),
            ExprKind::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            ExprKind::Value => {
                if self.ctx.domain_value {
                    "VALUE".into()
                } else {
                    self.name(
                        NameKind::Column,
                        &Name {
                            text: "VALUE".into(),
                            quoted: false,
                        },
                    )
                }
            }
            ExprKind::Introduced(charset, s) => {
                if charset == "OCTETS" {
                    return Err(refuse("_OCTETS", line, "a binary string introducer"));
                }
                string_literal(s)
            }
            ExprKind::Column(parts) => self.column(parts, line)?,
            ExprKind::Param(name) => match self.scope.variables.get(&name.text) {
                Some(v) => v.clone(),
                None => {
                    return Err(refuse(
                        &format!(":{}", name.text),
                        line,
                        "not a variable or parameter of the routine",
                    ));
                }
            },
            ExprKind::Star(None) => "*".into(),
            ExprKind::Star(Some(t)) => format!("{}.*", self.plain(t)),
            ExprKind::Context(c) => self.context(c, line)?,
            ExprKind::Unary(op, inner) => match op {
                UnaryOp::Neg => format!("-{}", self.operand(inner)?),
                UnaryOp::Plus => format!("+{}", self.operand(inner)?),
                UnaryOp::Not => format!("NOT {}", self.operand(inner)?),
            },
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r)?,
            ExprKind::IsNull(x, negated) => format!(
                "{} IS {}NULL",
                self.predicate_operand(x)?,
                if *negated { "NOT " } else { "" }
            ),
            ExprKind::Distinct(a, b, negated) => format!(
                "{} IS {}DISTINCT FROM {}",
                self.predicate_operand(a)?,
                if *negated { "NOT " } else { "" },
                self.predicate_operand(b)?
            ),
            ExprKind::IsBool(x, value, negated) => format!(
                "{} IS {}{}",
                self.predicate_operand(x)?,
                if *negated { "NOT " } else { "" },
                match value {
                    Some(true) => "TRUE",
                    Some(false) => "FALSE",
                    None => "UNKNOWN",
                }
            ),
            ExprKind::In(x, list, negated) => {
                let inner = match list {
                    InList::Values(values) => values
                        .iter()
                        .map(|v| self.expr(v))
                        .collect::<Result<Vec<_>>>()?
                        .join(", "),
                    InList::Query(q) => self.query(q)?,
                };
                format!(
                    "{} {}IN ({inner})",
                    self.predicate_operand(x)?,
                    if *negated { "NOT " } else { "" }
                )
            }
            ExprKind::Between(x, low, high, negated) => format!(
                "{} {}BETWEEN {} AND {}",
                self.predicate_operand(x)?,
                if *negated { "NOT " } else { "" },
                self.predicate_operand(low)?,
                self.predicate_operand(high)?
            ),
            ExprKind::Match {
                kind,
                value,
                pattern,
                escape,
                negated,
            } => self.matching(*kind, value, pattern, escape.as_deref(), *negated)?,
            ExprKind::Exists(q) => format!("EXISTS ({})", self.query(q)?),
            ExprKind::Subquery(q) => format!("({})", self.query(q)?),
            ExprKind::Quantified(op, x, all, q) => format!(
                "{} {} {} ({})",
                self.operand(x)?,
                op_text(*op),
                if *all { "ALL" } else { "ANY" },
                self.query(q)?
            ),
            ExprKind::Function {
                name,
                args,
                distinct,
                over,
            } => self.function(name, args, *distinct, over.as_ref(), line, pad)?,
            ExprKind::Cast(x, t) => self.cast(x, t, line)?,
            ExprKind::Case {
                operand,
                whens,
                otherwise,
            } => {
                let mut branches: Vec<&Expr> = whens.iter().map(|(_, t)| t).collect();
                branches.extend(otherwise.as_deref());
                // Firebird pads a searched CASE's literals, not a simple
                // CASE's (nor DECODE's), measured on Firebird 5.
                let results = self.branches(&branches, pad && operand.is_none())?;
                let mut s = "CASE".to_string();
                if let Some(o) = operand {
                    s += &format!(" {}", self.expr(o)?);
                }
                for ((w, _), t) in whens.iter().zip(&results) {
                    s += &format!(" WHEN {} THEN {t}", self.expr(w)?);
                }
                if otherwise.is_some() {
                    s += &format!(" ELSE {}", results[whens.len()]);
                }
                s + " END"
            }
            ExprKind::Extract(part, x) => self.extract(part, x, line)?,
            ExprKind::Substring(x, from, count) => match count {
                Some(c) => format!(
                    "SUBSTRING({} FROM {} FOR {})",
                    self.expr(x)?,
                    self.expr(from)?,
                    self.expr(c)?
                ),
                None => format!("SUBSTRING({} FROM {})", self.expr(x)?, self.expr(from)?),
            },
            ExprKind::Trim(spec, what, x) => {
                let mut s = "TRIM(".to_string();
                if let Some(spec) = spec {
                    s += spec;
                    s += " ";
                }
                if let Some(w) = what {
                    s += &self.expr(w)?;
                    s += " ";
                }
                if spec.is_some() || what.is_some() {
                    s += "FROM ";
                }
                s + &self.expr(x)? + ")"
            }
            ExprKind::Position(a, b) => {
                format!("POSITION({} IN {})", self.operand(a)?, self.operand(b)?)
            }
            ExprKind::DateAdd(unit, n, x) => {
                let (count, unit) = interval_unit(unit, line)?;
                let kind = self.temporal(x);
                let sum = format!(
                    "{} + {} * INTERVAL '{count} {unit}'",
                    self.operand(x)?,
                    self.operand(n)?
                );
                // A date stays a date in Firebird (days and larger units).
                if kind == Some(Temporal::Date) {
                    format!("CAST({sum} AS date)")
                } else {
                    sum
                }
            }
            ExprKind::DateDiff(unit, a, b) => self.datediff(unit, a, b, line)?,
            ExprKind::DayOf(last, unit, x) => self.day_of(*last, unit, x, line)?,
            ExprKind::Element(array, subscripts) => {
                let mut s = self.expr(array)?;
                for i in subscripts {
                    s += &format!("[{}]", self.expr(i)?);
                }
                s
            }
            ExprKind::NextValue(g, step) => {
                let sequence = string_literal(&self.name(NameKind::Sequence, g));
                match step.as_deref().map(|s| &s.kind) {
                    None => format!("nextval({sequence})"),
                    Some(ExprKind::Number(n)) if n == "1" => format!("nextval({sequence})"),
                    Some(ExprKind::Number(n)) if n == "0" => format!(
                        "(SELECT last_value FROM {})",
                        self.name(NameKind::Sequence, g)
                    ),
                    _ => {
                        return Err(refuse(
                            "GEN_ID with a step other than 0 or 1",
                            line,
                            "a PostgreSQL sequence steps by its own increment",
                        ));
                    }
                }
            }
        })
    }

    fn column(&self, parts: &[Name], line: u32) -> Result<String> {
        match parts {
            [one] => {
                if !self.scope.sql {
                    if let Some(v) = self.scope.variables.get(&one.text) {
                        return Ok(v.clone());
                    }
                }
                Ok(self.name(NameKind::Column, one))
            }
            [q, c] => {
                if self.scope.trigger && !q.quoted && (q.text == "NEW" || q.text == "OLD") {
                    return Ok(format!("{}.{}", q.text, self.name(NameKind::Column, c)));
                }
                if let Some(record) = self.scope.cursor_rows.get(&q.text) {
                    return Ok(format!("{record}.{}", self.name(NameKind::Column, c)));
                }
                Ok(format!(
                    "{}.{}",
                    self.plain(q),
                    self.name(NameKind::Column, c)
                ))
            }
            _ => Err(refuse(
                &parts
                    .iter()
                    .map(|p| p.text.as_str())
                    .collect::<Vec<_>>()
                    .join("."),
                line,
                "a name of three parts",
            )),
        }
    }

    fn context(&self, c: &str, line: u32) -> Result<String> {
        Ok(match c {
            "CURRENT_DATE" => "CURRENT_DATE".into(),
            // Firebird 3's are without time zone.
            "CURRENT_TIME" | "LOCALTIME" => "LOCALTIME".into(),
            "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" => "LOCALTIMESTAMP".into(),
            "CURRENT_USER" | "USER" => "CURRENT_USER".into(),
            "CURRENT_CONNECTION" => "pg_backend_pid()".into(),
            "CURRENT_TRANSACTION" => "txid_current()".into(),
            "SQLSTATE" if !self.scope.variables.is_empty() || self.scope.trigger => {
                "SQLSTATE".into()
            }
            "ROW_COUNT" if self.scope.row_count => "fb_row_count".into(),
            "INSERTING" | "UPDATING" | "DELETING" if self.scope.trigger => {
                let op = match c {
                    "INSERTING" => "INSERT",
                    "UPDATING" => "UPDATE",
                    _ => "DELETE",
                };
                format!("(TG_OP = '{op}')")
            }
            _ => {
                return Err(refuse(c, line, "no PostgreSQL counterpart in this place"));
            }
        })
    }

    fn binary(&self, op: BinaryOp, l: &Expr, r: &Expr) -> Result<String> {
        // Firebird compares strings as if padded with spaces (`'' = ' '`
        // holds), PostgreSQL's text and varchar do not: where the words
        // say it (a literal that ends in spaces) the spaces are trimmed
        // on both sides.
        if matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
            let padded = |e: &Expr| matches!(&e.kind, ExprKind::Str(s) if s.ends_with(' '));
            let sides = if padded(r) {
                Some((l, r))
            } else if padded(l) {
                Some((r, l))
            } else {
                None
            };
            if let Some((other, ExprKind::Str(literal))) = sides.map(|(o, l)| (o, &l.kind)) {
                return Ok(format!(
                    "rtrim(CAST({} AS text)) {} {}",
                    self.expr(other)?,
                    op_text(op),
                    string_literal(literal.trim_end_matches(' '))
                ));
            }
        }
        // Firebird adds days to a timestamp and seconds to a time.
        if matches!(op, BinaryOp::Add | BinaryOp::Sub) {
            let (lt, rt) = (self.temporal(l), self.temporal(r));
            let unit = match (lt, rt) {
                (Some(Temporal::Timestamp), None) => Some("1 day"),
                (Some(Temporal::Time), None) => Some("1 second"),
                (None, Some(Temporal::Timestamp)) if op == BinaryOp::Add => Some("1 day"),
                _ => None,
            };
            if let Some(unit) = unit {
                let (t, n) = if lt.is_some() { (l, r) } else { (r, l) };
                return Ok(format!(
                    "{} {} {} * INTERVAL '{unit}'",
                    self.operand(t)?,
                    op_text(op),
                    self.operand(n)?
                ));
            }
            if lt.is_some() && lt == rt && lt != Some(Temporal::Date) && op == BinaryOp::Sub {
                // Firebird gives days (a number), PostgreSQL an interval.
                return Ok(format!(
                    "(EXTRACT(EPOCH FROM {} - {}) / 86400)",
                    self.operand(l)?,
                    self.operand(r)?
                ));
            }
        }
        let me = binary_precedence(op);
        let side = |e: &Expr, left: bool| -> Result<String> {
            let child = precedence(e);
            let same_associative = matches!(&e.kind, ExprKind::Binary(inner, _, _)
                if *inner == op && matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Concat | BinaryOp::Add | BinaryOp::Mul));
            let comparison = me == 50;
            // AND inside OR keeps its parentheses, for the reader.
            let and_in_or = op == BinaryOp::Or && child == 20;
            let bare = !and_in_or
                && (child > me || (child == me && !comparison && (left || same_associative)));
            self.pad.set(op == BinaryOp::Concat);
            let text = self.expr(e)?;
            Ok(if bare { text } else { format!("({text})") })
        };
        Ok(format!(
            "{} {} {}",
            side(l, true)?,
            op_text(op),
            side(r, false)?
        ))
    }

    fn variable_temporal(&self, name: &str) -> Option<Temporal> {
        let t = self.scope.variable_types.get(name)?;
        match t.split([' ', '(']).next().unwrap_or("") {
            "date" => Some(Temporal::Date),
            "time" => Some(Temporal::Time),
            "timestamp" => Some(Temporal::Timestamp),
            _ => None,
        }
    }

    fn temporal(&self, e: &Expr) -> Option<Temporal> {
        match &e.kind {
            ExprKind::Context(c) => match c.as_str() {
                "CURRENT_DATE" => Some(Temporal::Date),
                "CURRENT_TIME" | "LOCALTIME" => Some(Temporal::Time),
                "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" => Some(Temporal::Timestamp),
                _ => None,
            },
            ExprKind::Cast(_, DataType::Builtin { name, .. }) => match name.as_str() {
                "DATE" => Some(Temporal::Date),
                "TIME" => Some(Temporal::Time),
                "TIMESTAMP" => Some(Temporal::Timestamp),
                _ => None,
            },
            ExprKind::DateAdd(_, _, x) => self.temporal(x),
            ExprKind::Param(name) => self.variable_temporal(&name.text),
            ExprKind::Column(parts) if !parts.is_empty() => {
                let name = &parts[parts.len() - 1].text;
                if parts.len() == 1 && self.scope.variables.contains_key(name) {
                    // In SQL a bare name is a column first.
                    return if self.scope.sql {
                        None
                    } else {
                        self.variable_temporal(name)
                    };
                }
                let t = (self.ctx.column_types)(name)?;
                let word = t.split([' ', '(']).next().unwrap_or("");
                match word {
                    "DATE" => Some(Temporal::Date),
                    "TIME" => Some(Temporal::Time),
                    "TIMESTAMP" => Some(Temporal::Timestamp),
                    _ => None,
                }
            }
            ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, l, r) => {
                match (self.temporal(l), self.temporal(r)) {
                    (Some(t), None) | (None, Some(t)) => Some(t),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn matching(
        &self,
        kind: MatchKind,
        value: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        negated: bool,
    ) -> Result<String> {
        let not = if negated { "NOT " } else { "" };
        let v = self.predicate_operand(value)?;
        let p = self.predicate_operand(pattern)?;
        // PostgreSQL's LIKE and SIMILAR TO escape with a backslash unless
        // told otherwise; Firebird's escape with nothing.
        let escape = match escape {
            Some(e) => self.operand(e)?,
            None => "''".into(),
        };
        Ok(match kind {
            MatchKind::Like => format!("{v} {not}LIKE {p} ESCAPE {escape}"),
            MatchKind::SimilarTo => format!("{v} {not}SIMILAR TO {p} ESCAPE {escape}"),
            MatchKind::StartingWith => {
                format!("{not}starts_with(CAST({v} AS text), CAST({p} AS text))")
            }
            // Firebird's CONTAINING ignores case.
            MatchKind::Containing => {
                format!("{not}(POSITION(lower(CAST({p} AS text)) IN lower(CAST({v} AS text))) > 0)")
            }
        })
    }

    /// The results of a CASE (IIF, DECODE). Where all are string
    /// literals, Firebird's result is a CHAR as long as the longest, and
    /// `||` keeps its padding (`IIF(c, 'cheap', 'dear') || ':'` gives
    /// `dear :`): an operand of `||` (`pad`) gets the shorter ones padded.
    /// Elsewhere they stay as written: a comparison ignores the padding
    /// in Firebird, and PostgreSQL's text would not.
    fn branches(&self, results: &[&Expr], pad: bool) -> Result<Vec<String>> {
        let literals: Option<Vec<&String>> = results
            .iter()
            .map(|e| match &e.kind {
                ExprKind::Str(s) => Some(s),
                _ => None,
            })
            .collect();
        match literals {
            Some(texts) if pad && !texts.is_empty() => {
                let width = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
                Ok(texts
                    .iter()
                    .map(|t| string_literal(&format!("{t:<width$}")))
                    .collect())
            }
            _ => results.iter().map(|e| self.expr(e)).collect(),
        }
    }

    /// A call of the database's procedure or function, each argument
    /// converted to its parameter's type where that is known.
    pub(crate) fn call(&self, name: &str, args: &[Expr]) -> Result<String> {
        let inputs = (self.ctx.routine_inputs)(name).unwrap_or_default();
        let mut texts = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            let text = self.expr(arg)?;
            texts.push(match inputs.get(i) {
                Some(Some(t)) => format!("CAST({text} AS {t})"),
                _ => text,
            });
        }
        Ok(format!(
            "{}({})",
            (self.ctx.names)(NameKind::Procedure, name),
            texts.join(", ")
        ))
    }

    fn args(&self, args: &[Expr]) -> Result<Vec<String>> {
        args.iter().map(|a| self.expr(a)).collect()
    }

    fn function(
        &self,
        name: &str,
        args: &[Expr],
        distinct: bool,
        over: Option<&Window>,
        line: u32,
        pad: bool,
    ) -> Result<String> {
        let a = self.args(args)?;
        let n = a.len();
        let arity = |ok: bool| -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(refuse(name, line, "an unexpected number of arguments"))
            }
        };
        let same = [
            "UPPER",
            "LOWER",
            "COALESCE",
            "NULLIF",
            "ABS",
            "CEIL",
            "CEILING",
            "FLOOR",
            "SIGN",
            "SQRT",
            "EXP",
            "LN",
            "POWER",
            "MOD",
            "CHAR_LENGTH",
            "CHARACTER_LENGTH",
            "OCTET_LENGTH",
            "BIT_LENGTH",
            "REPLACE",
            "LPAD",
            "RPAD",
            "LEFT",
            "RIGHT",
            "REVERSE",
            "PI",
            "SIN",
            "COS",
            "TAN",
            "ASIN",
            "ACOS",
            "ATAN",
            "ATAN2",
            "COT",
            "COUNT",
            "SUM",
            "MIN",
            "MAX",
            "ROW_NUMBER",
            "RANK",
            "DENSE_RANK",
            "LAG",
            "LEAD",
            "FIRST_VALUE",
            "LAST_VALUE",
            "NTH_VALUE",
            "NTILE",
            "PERCENT_RANK",
            "CUME_DIST",
            "STDDEV_POP",
            "STDDEV_SAMP",
            "VAR_POP",
            "VAR_SAMP",
            "CORR",
            "COVAR_POP",
            "COVAR_SAMP",
            "AVG",
        ];
        let call = if same.contains(&name) {
            let d = if distinct { "DISTINCT " } else { "" };
            format!("{}({d}{})", name.to_ascii_lowercase(), a.join(", "))
        } else {
            match name {
                "IIF" => {
                    arity(n == 3)?;
                    let r = self.branches(&[&args[1], &args[2]], pad)?;
                    format!("CASE WHEN {} THEN {} ELSE {} END", a[0], r[0], r[1])
                }
                "DECODE" => {
                    arity(n >= 3)?;
                    let mut s = format!("CASE {}", a[0]);
                    let mut i = 1;
                    while i + 1 < n {
                        s += &format!(" WHEN {} THEN {}", a[i], a[i + 1]);
                        i += 2;
                    }
                    if i < n {
                        s += &format!(" ELSE {}", a[i]);
                    }
                    s + " END"
                }
                // NULL if any argument is NULL, where GREATEST skips it.
                "MAXVALUE" | "MINVALUE" => {
                    arity(n >= 1)?;
                    let any_null = a
                        .iter()
                        .map(|x| format!("({x}) IS NULL"))
                        .collect::<Vec<_>>()
                        .join(" OR ");
                    let f = if name == "MAXVALUE" {
                        "GREATEST"
                    } else {
                        "LEAST"
                    };
                    format!(
                        "CASE WHEN {any_null} THEN NULL ELSE {f}({}) END",
                        a.join(", ")
                    )
                }
                "ASCII_CHAR" => {
                    arity(n == 1)?;
                    format!("chr({})", a[0])
                }
                "ASCII_VAL" => {
                    arity(n == 1)?;
                    format!("ascii({})", a[0])
                }
                // Firebird rounds half away from zero, doubles too.
                "ROUND" | "TRUNC" => {
                    arity(n == 1 || n == 2)?;
                    let f = name.to_ascii_lowercase();
                    if n == 1 {
                        format!("{f}(CAST({} AS numeric))", a[0])
                    } else {
                        format!("{f}(CAST({} AS numeric), {})", a[0], a[1])
                    }
                }
                "LOG10" => {
                    arity(n == 1)?;
                    format!("log({})", a[0])
                }
                "LOG" => {
                    arity(n == 2)?;
                    format!("log(CAST({} AS numeric), CAST({} AS numeric))", a[0], a[1])
                }
                "RAND" => {
                    arity(n == 0)?;
                    "random()".into()
                }
                // Firebird's UUIDs are 16 bytes (CHAR(16) OCTETS, bytea here).
                "GEN_UUID" => {
                    arity(n == 0)?;
                    "decode(replace(CAST(gen_random_uuid() AS text), '-', ''), 'hex')".into()
                }
                "UUID_TO_CHAR" => {
                    arity(n == 1)?;
                    format!("upper(CAST(CAST(encode({}, 'hex') AS uuid) AS text))", a[0])
                }
                "CHAR_TO_UUID" => {
                    arity(n == 1)?;
                    format!("decode(replace(CAST({} AS text), '-', ''), 'hex')", a[0])
                }
                "RDB$GET_CONTEXT" | "RDB$SET_CONTEXT" => {
                    self.context_variable(name, args, &a, line)?
                }
                "OVERLAY" => {
                    arity(n == 3 || n == 4)?;
                    let count = if n == 4 {
                        format!(" FOR {}", a[3])
                    } else {
                        String::new()
                    };
                    format!("OVERLAY({} PLACING {} FROM {}{count})", a[0], a[1], a[2])
                }
                // POSITION(a, b, start): the first a in b at or after start.
                "POSITION" => {
                    arity(n == 3)?;
                    let found = format!("strpos(substr({}, {}), {})", a[1], a[2], a[0]);
                    format!(
                        "(CASE WHEN {found} = 0 THEN 0 ELSE {found} + {} - 1 END)",
                        a[2]
                    )
                }
                // Bitwise, on integers (BIN_SHR shifts the sign in, as >> does).
                "BIN_AND" | "BIN_OR" | "BIN_XOR" => {
                    arity(n >= 1)?;
                    let op = match name {
                        "BIN_AND" => " & ",
                        "BIN_OR" => " | ",
                        _ => " # ",
                    };
                    let operands: Vec<String> = a.iter().map(|x| format!("({x})")).collect();
                    format!("({})", operands.join(op))
                }
                "BIN_SHL" | "BIN_SHR" => {
                    arity(n == 2)?;
                    let op = if name == "BIN_SHL" { "<<" } else { ">>" };
                    format!("(({}) {op} ({}))", a[0], a[1])
                }
                "BIN_NOT" => {
                    arity(n == 1)?;
                    format!("(~({}))", a[0])
                }
                "HASH" => {
                    return Err(refuse(
                        name,
                        line,
                        "Firebird's own 64-bit hash: PostgreSQL has no function giving the same \
                         numbers",
                    ));
                }
                "LIST" => {
                    arity(n == 1 || n == 2)?;
                    let d = if distinct { "DISTINCT " } else { "" };
                    let sep = if n == 2 { a[1].clone() } else { "','".into() };
                    format!("string_agg({d}CAST({} AS text), {sep})", a[0])
                }
                _ if (self.ctx.functions)(name) => self.call(name, args)?,
                _ => {
                    return Err(refuse(
                        name,
                        line,
                        "a function with no PostgreSQL counterpart known to fbunload",
                    ));
                }
            }
        };
        match over {
            None => Ok(call),
            Some(w) => {
                let mut parts = Vec::new();
                if !w.partition.is_empty() {
                    parts.push(format!(
                        "PARTITION BY {}",
                        self.args(&w.partition)?.join(", ")
                    ));
                }
                if !w.order.is_empty() {
                    parts.push(format!("ORDER BY {}", self.order(&w.order)?));
                }
                Ok(format!("{call} OVER ({})", parts.join(" ")))
            }
        }
    }

    /// `RDB$GET_CONTEXT` / `RDB$SET_CONTEXT`. A user's variables are
    /// PostgreSQL settings of their own prefix (`fb_user_session.`,
    /// `fb_user_transaction.`, set local to the transaction), named by
    /// the md5 of the variable's name (a setting's name takes only
    /// letters, digits and `_`); the value is kept after an `=`, so an
    /// empty string stays one and a variable never set or set to NULL
    /// reads NULL, as in Firebird. `SYSTEM` variables that PostgreSQL
    /// has are read from it.
    fn context_variable(
        &self,
        name: &str,
        args: &[Expr],
        a: &[String],
        line: u32,
    ) -> Result<String> {
        let set = name == "RDB$SET_CONTEXT";
        if a.len() != if set { 3 } else { 2 } {
            return Err(refuse(name, line, "an unexpected number of arguments"));
        }
        let ExprKind::Str(namespace) = &args[0].kind else {
            return Err(refuse(
                name,
                line,
                "a namespace that is not a constant: which one is not known here",
            ));
        };
        let (prefix, local) = match namespace.as_str() {
            "USER_SESSION" => ("fb_user_session", false),
            "USER_TRANSACTION" => ("fb_user_transaction", true),
            "SYSTEM" if !set => {
                let variable = match &args[1].kind {
                    ExprKind::Str(v) => v.as_str(),
                    _ => "",
                };
                let value = match variable {
                    "DB_NAME" => "current_database()",
                    "SESSION_ID" => "pg_backend_pid()",
                    "TRANSACTION_ID" => "txid_current()",
                    "CURRENT_USER" => "CURRENT_USER",
                    "CLIENT_ADDRESS" => "host(inet_client_addr())",
                    "CLIENT_PID" => "pg_backend_pid()",
                    _ => {
                        return Err(refuse(
                            &format!("RDB$GET_CONTEXT('SYSTEM', {})", a[1]),
                            line,
                            "no PostgreSQL counterpart known to fbunload",
                        ));
                    }
                };
                return Ok(format!("CAST({value} AS varchar(255))"));
            }
            other => {
                return Err(refuse(
                    &format!("{name}('{other}')"),
                    line,
                    "a namespace PostgreSQL has no counterpart of",
                ));
            }
        };
        let key = format!("'{prefix}.v' || md5(CAST({} AS text))", a[1]);
        let current = format!("nullif(current_setting({key}, true), '')");
        if !set {
            return Ok(format!("CAST(substr({current}, 2) AS varchar(255))"));
        }
        // 1 where the variable was set before, as Firebird's; the
        // setting is made after that is read (operands left to right).
        Ok(format!(
            "(CASE WHEN {current} IS NULL THEN 0 ELSE 1 END + 0 * length(set_config({key}, '=' || CAST({} AS text), {local})))",
            a[2]
        ))
    }

    pub fn data_type(&self, t: &DataType, line: u32) -> Result<String> {
        match t {
            DataType::Domain(d) => Ok((self.ctx.names)(NameKind::Domain, &d.text)),
            DataType::TypeOf(parts) => match parts.as_slice() {
                [d] => Ok((self.ctx.names)(NameKind::Domain, &d.text)),
                [t, c] => Ok(format!(
                    "{}.{}%TYPE",
                    self.name(NameKind::Table, t),
                    self.name(NameKind::Column, c)
                )),
                _ => Err(refuse("TYPE OF", line, "a name of three parts")),
            },
            DataType::Builtin {
                name,
                args,
                charset,
                sub_type,
                time_zone,
            } => {
                let octets = charset.as_deref() == Some("OCTETS");
                let arg = |i: usize| args.get(i).cloned();
                let with_tz = *time_zone == Some(true);
                Ok(match name.as_str() {
                    "SMALLINT" => "smallint".into(),
                    "INTEGER" | "INT" => "integer".into(),
                    "BIGINT" => "bigint".into(),
                    "INT128" => "numeric(39,0)".into(),
                    "FLOAT" => match arg(0).and_then(|p| p.parse::<u32>().ok()) {
                        Some(p) if p > 7 => "double precision".into(),
                        _ => "real".into(),
                    },
                    "REAL" => "real".into(),
                    "DOUBLE PRECISION" => "double precision".into(),
                    "DECIMAL" | "NUMERIC" | "DEC" => match (arg(0), arg(1)) {
                        (Some(p), Some(s)) => format!("numeric({p},{s})"),
                        (Some(p), None) => format!("numeric({p},0)"),
                        _ => "numeric(9,0)".into(),
                    },
                    "DECFLOAT" => "numeric".into(),
                    "DATE" => "date".into(),
                    "TIME" => if with_tz {
                        "time with time zone"
                    } else {
                        "time"
                    }
                    .into(),
                    "TIMESTAMP" => if with_tz {
                        "timestamp with time zone"
                    } else {
                        "timestamp"
                    }
                    .into(),
                    "BOOLEAN" => "boolean".into(),
                    "CHAR" | "CHARACTER" | "NCHAR" if octets => "bytea".into(),
                    "CHAR" | "CHARACTER" | "NCHAR" => {
                        format!("char({})", arg(0).unwrap_or_else(|| "1".into()))
                    }
                    "VARCHAR" if octets => "bytea".into(),
                    "VARCHAR" => match arg(0) {
                        Some(n) => format!("varchar({n})"),
                        None => return Err(refuse("VARCHAR", line, "a VARCHAR without a length")),
                    },
                    "BINARY" | "VARBINARY" => "bytea".into(),
                    "BLOB" => match sub_type.as_deref() {
                        Some("TEXT") | Some("1") => "text".into(),
                        None | Some("BINARY") | Some("0") => "bytea".into(),
                        Some(other) => {
                            return Err(refuse(
                                &format!("BLOB SUB_TYPE {other}"),
                                line,
                                "a BLOB sub-type of its own",
                            ));
                        }
                    },
                    other => return Err(refuse(other, line, "a type not translated")),
                })
            }
        }
    }

    fn cast(&self, x: &Expr, t: &DataType, line: u32) -> Result<String> {
        if let (ExprKind::Str(s), DataType::Builtin { name, .. }) = (&x.kind, t) {
            if let Some(special) = special_date(s, name) {
                return Ok(special);
            }
            if name == "DATE" || name == "TIMESTAMP" {
                if let Some(iso) = dotted_date(s) {
                    return Ok(format!(
                        "CAST({} AS {})",
                        string_literal(&iso),
                        self.data_type(t, line)?
                    ));
                }
            }
        }
        Ok(format!(
            "CAST({} AS {})",
            self.expr(x)?,
            self.data_type(t, line)?
        ))
    }

    fn extract(&self, part: &str, x: &Expr, line: u32) -> Result<String> {
        let v = self.expr(x)?;
        // Firebird's EXTRACT gives integers (SECOND a DECIMAL(9,4)).
        Ok(match part {
            "YEAR" | "MONTH" | "DAY" | "HOUR" | "MINUTE" | "WEEK" => {
                format!("CAST(EXTRACT({part} FROM {v}) AS integer)")
            }
            "SECOND" => format!("CAST(EXTRACT(SECOND FROM {v}) AS numeric(9,4))"),
            "WEEKDAY" => format!("CAST(EXTRACT(DOW FROM {v}) AS integer)"),
            "QUARTER" => format!("CAST(EXTRACT(QUARTER FROM {v}) AS integer)"),
            "YEARDAY" => format!("(CAST(EXTRACT(DOY FROM {v}) AS integer) - 1)"),
            "MILLISECOND" => {
                format!("CAST(mod(EXTRACT(MILLISECONDS FROM {v}), 1000) AS numeric(9,1))")
            }
            _ => return Err(refuse(&format!("EXTRACT({part})"), line, "not translated")),
        })
    }

    /// Firebird's DATEDIFF counts the unit's boundaries between the two
    /// (`DATEDIFF(HOUR, 23:59, 00:01)` is 1, measured on Firebird 5):
    /// whole years, months and days of the date parts, weeks as whole
    /// days / 7, and hours, minutes, seconds of both truncated to the
    /// unit; milliseconds with a decimal (NUMERIC(18,1), Firebird 4 on).
    fn datediff(&self, unit: &str, a_expr: &Expr, b_expr: &Expr, line: u32) -> Result<String> {
        let (a, b) = (self.operand(a_expr)?, self.operand(b_expr)?);
        let years = format!("(EXTRACT(YEAR FROM {b}) - EXTRACT(YEAR FROM {a}))");
        // A time of day is an interval since midnight (PostgreSQL casts
        // no time to a timestamp).
        let time = self.temporal(a_expr) == Some(Temporal::Time)
            || self.temporal(b_expr) == Some(Temporal::Time);
        let moment = |x: &str| {
            if time {
                format!("CAST({x} AS interval)")
            } else {
                format!("CAST({x} AS timestamp)")
            }
        };
        let boundaries = |unit: &str, seconds: u32| {
            format!(
                "CAST((EXTRACT(EPOCH FROM date_trunc('{unit}', {})) - EXTRACT(EPOCH FROM date_trunc('{unit}', {}))) / {seconds} AS bigint)",
                moment(&b),
                moment(&a)
            )
        };
        Ok(match unit {
            "YEAR" => format!("CAST({years} AS bigint)"),
            "MONTH" => format!(
                "CAST({years} * 12 + EXTRACT(MONTH FROM {b}) - EXTRACT(MONTH FROM {a}) AS bigint)"
            ),
            "WEEK" => format!("CAST(trunc((CAST({b} AS date) - CAST({a} AS date)) / 7) AS bigint)"),
            "DAY" => format!("CAST(CAST({b} AS date) - CAST({a} AS date) AS bigint)"),
            "HOUR" => boundaries("hour", 3600),
            "MINUTE" => boundaries("minute", 60),
            "SECOND" => boundaries("second", 1),
            "MILLISECOND" => format!(
                "CAST(EXTRACT(EPOCH FROM {} - {}) * 1000 AS numeric(18,1))",
                moment(&b),
                moment(&a)
            ),
            _ => return Err(refuse(&format!("DATEDIFF({unit})"), line, "not translated")),
        })
    }

    /// `FIRST_DAY`/`LAST_DAY(OF unit FROM x)`, of the same type as `x`
    /// (measured on Firebird 5): a timestamp keeps its time of day, a
    /// week runs Sunday to Saturday. PostgreSQL's arithmetic gives
    /// another type for a date than for a timestamp, so the argument's
    /// type must be known here.
    fn day_of(&self, last: bool, unit: &str, x: &Expr, line: u32) -> Result<String> {
        let what = format!("{}_DAY(OF {unit})", if last { "LAST" } else { "FIRST" });
        let kind = self.temporal(x);
        if !matches!(kind, Some(Temporal::Date) | Some(Temporal::Timestamp)) {
            return Err(refuse(
                &what,
                line,
                "the type of its argument (DATE or TIMESTAMP) is not known here",
            ));
        }
        let date = kind == Some(Temporal::Date);
        let v = self.operand(x)?;
        Ok(match unit {
            "WEEK" => {
                let days = if last {
                    format!("(6 - CAST(EXTRACT(DOW FROM {v}) AS integer))")
                } else {
                    format!("-CAST(EXTRACT(DOW FROM {v}) AS integer)")
                };
                if date {
                    format!("({v} + {days})")
                } else {
                    format!("({v} + {days} * INTERVAL '1 day')")
                }
            }
            "YEAR" | "QUARTER" | "MONTH" => {
                let u = unit.to_ascii_lowercase();
                let mut day = format!("date_trunc('{u}', {v})");
                if last {
                    let span = if u == "quarter" {
                        "3 month".to_string()
                    } else {
                        format!("1 {u}")
                    };
                    day = format!("{day} + INTERVAL '{span}' - INTERVAL '1 day'");
                }
                if date {
                    format!("CAST({day} AS date)")
                } else {
                    format!("({day} + CAST({v} AS time))")
                }
            }
            _ => return Err(refuse(&what, line, "not translated")),
        })
    }

    fn order(&self, items: &[OrderItem]) -> Result<String> {
        let mut out = Vec::new();
        for item in items {
            let mut s = self.expr(&item.expr)?;
            if item.descending {
                s += " DESC";
            }
            // Firebird puts NULLs first ascending, PostgreSQL last.
            match item.nulls {
                Some(true) => s += " NULLS FIRST",
                Some(false) => s += " NULLS LAST",
                None if item.descending => s += " NULLS LAST",
                None => s += " NULLS FIRST",
            }
            out.push(s);
        }
        Ok(out.join(", "))
    }

    pub fn query(&self, q: &Query) -> Result<String> {
        let mut s = String::new();
        let mut me = Gen {
            ctx: self.ctx,
            scope: Scope {
                sql: true,
                ..self.scope.clone()
            },
            ctes: self.ctes.clone(),
            derived: std::cell::Cell::new(self.derived.get()),
            pad: std::cell::Cell::new(false),
        };
        if !q.with.is_empty() {
            me.ctes
                .push(q.with.iter().map(|c| c.name.text.clone()).collect());
            s += "WITH ";
            if q.recursive {
                s += "RECURSIVE ";
            }
            let mut parts = Vec::new();
            for cte in &q.with {
                let mut p = me.plain(&cte.name);
                if !cte.columns.is_empty() {
                    p += &format!(
                        " ({})",
                        cte.columns
                            .iter()
                            .map(|c| me.plain(c))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                p += &format!(" AS ({})", me.query(&cte.query)?);
                parts.push(p);
            }
            s += &parts.join(", ");
            s += " ";
        }
        s += &me.set_expr(&q.body)?;
        if !q.order.is_empty() {
            s += &format!(" ORDER BY {}", me.order(&q.order)?);
        }
        if let Some(l) = &q.limit {
            s += &format!(" LIMIT {}", me.operand(l)?);
        }
        if let Some(o) = &q.offset {
            s += &format!(" OFFSET {}", me.operand(o)?);
        }
        match q.lock {
            Some(true) => s += " FOR UPDATE SKIP LOCKED",
            Some(false) => s += " FOR UPDATE",
            None => {}
        }
        self.derived.set(me.derived.get());
        Ok(s)
    }

    fn set_expr(&self, body: &SetExpr) -> Result<String> {
        Ok(match body {
            SetExpr::Select(s) => self.select(s)?,
            SetExpr::Union(l, r, all) => format!(
                "{} UNION {}{}",
                self.set_expr(l)?,
                if *all { "ALL " } else { "" },
                self.set_expr(r)?
            ),
            SetExpr::Nested(q) => format!("({})", self.query(q)?),
        })
    }

    fn select(&self, s: &Select) -> Result<String> {
        let mut out = "SELECT ".to_string();
        if s.distinct {
            out += "DISTINCT ";
        }
        let mut items = Vec::new();
        for item in &s.items {
            let mut t = self.expr(&item.expr)?;
            if let Some(a) = &item.alias {
                t += &format!(" AS {}", self.plain(a));
            }
            items.push(t);
        }
        out += &items.join(", ");
        // RDB$DATABASE alone: PostgreSQL selects without FROM.
        let only_database = matches!(s.from.as_slice(),
            [TableRef::Table { name, alias: None, .. }] if !name.quoted && name.text == "RDB$DATABASE");
        if !s.from.is_empty() && !only_database {
            let from = s
                .from
                .iter()
                .map(|t| self.table_ref(t))
                .collect::<Result<Vec<_>>>()?;
            out += &format!(" FROM {}", from.join(", "));
        }
        if let Some(f) = &s.filter {
            out += &format!(" WHERE {}", self.expr(f)?);
        }
        if !s.group.is_empty() {
            out += &format!(" GROUP BY {}", self.args(&s.group)?.join(", "));
        }
        if let Some(h) = &s.having {
            out += &format!(" HAVING {}", self.expr(h)?);
        }
        Ok(out)
    }

    pub(crate) fn table_ref(&self, t: &TableRef) -> Result<String> {
        let alias = |a: &Option<Name>| match a {
            Some(a) => format!(" AS {}", self.plain(a)),
            None => String::new(),
        };
        Ok(match t {
            TableRef::Table {
                name,
                alias: a,
                line,
            } => {
                if !name.quoted && self.ctes.iter().any(|c| c.contains(&name.text)) {
                    format!("{}{}", self.plain(name), alias(a))
                } else if !name.quoted && name.text == "RDB$DATABASE" {
                    let a = a.as_ref().map(|a| self.plain(a));
                    format!(
                        "(SELECT 1) AS {}",
                        a.unwrap_or_else(|| quote("rdb$database"))
                    )
                } else if name.text.starts_with("RDB$")
                    || name.text.starts_with("MON$")
                    || name.text.starts_with("SEC$")
                {
                    return Err(refuse(&name.text, *line, "Firebird's own catalog"));
                } else {
                    format!("{}{}", self.name(NameKind::Table, name), alias(a))
                }
            }
            TableRef::Procedure {
                name,
                args,
                alias: a,
            } => format!("{}{}", self.call(&name.text, args)?, alias(a)),
            TableRef::Derived {
                query,
                alias: a,
                columns,
            } => {
                let name = match a {
                    Some(a) => self.plain(a),
                    None => {
                        let n = self.derived.get() + 1;
                        self.derived.set(n);
                        quote(&format!("fb_derived_{n}"))
                    }
                };
                let mut s = format!("({}) AS {name}", self.query(query)?);
                if !columns.is_empty() {
                    s += &format!(
                        " ({})",
                        columns
                            .iter()
                            .map(|c| self.plain(c))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                s
            }
            TableRef::Join {
                left,
                kind,
                right,
                on,
                using,
            } => {
                let k = match kind {
                    JoinKind::Inner => "JOIN",
                    JoinKind::Left => "LEFT JOIN",
                    JoinKind::Right => "RIGHT JOIN",
                    JoinKind::Full => "FULL JOIN",
                    JoinKind::Cross => "CROSS JOIN",
                    JoinKind::Natural => "NATURAL JOIN",
                };
                let mut s = format!("{} {k} {}", self.table_ref(left)?, self.table_ref(right)?);
                if let Some(on) = on {
                    s += &format!(" ON {}", self.expr(on)?);
                }
                if !using.is_empty() {
                    s += &format!(
                        " USING ({})",
                        using
                            .iter()
                            .map(|c| self.plain(c))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                s
            }
        })
    }
}

/// How tightly PostgreSQL binds an operator (higher binds tighter):
/// `* /` over `+ -` over `||` over comparisons over NOT, AND, OR.
fn binary_precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Or => 10,
        BinaryOp::And => 20,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            50
        }
        BinaryOp::Concat => 60,
        BinaryOp::Add | BinaryOp::Sub => 70,
        BinaryOp::Mul | BinaryOp::Div => 80,
    }
}

/// The precedence of the text an expression becomes.
fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary(op, ..) => binary_precedence(*op),
        ExprKind::Unary(UnaryOp::Not, _) => 30,
        ExprKind::IsNull(..) | ExprKind::IsBool(..) | ExprKind::Distinct(..) => 40,
        ExprKind::In(..) | ExprKind::Between(..) | ExprKind::Quantified(..) => 45,
        ExprKind::Match { kind, .. } => match kind {
            MatchKind::Like | MatchKind::SimilarTo => 45,
            _ => 30,
        },
        ExprKind::DateAdd(..) => 70,
        ExprKind::Unary(..) => 90,
        ExprKind::Number(n) if n.starts_with('-') => 90,
        _ => 100,
    }
}

fn is_term(e: &Expr) -> bool {
    !matches!(
        e.kind,
        ExprKind::Unary(..)
            | ExprKind::Binary(..)
            | ExprKind::IsNull(..)
            | ExprKind::Distinct(..)
            | ExprKind::IsBool(..)
            | ExprKind::In(..)
            | ExprKind::Between(..)
            | ExprKind::Match { .. }
            | ExprKind::Quantified(..)
            | ExprKind::DateAdd(..)
            | ExprKind::Exists(..)
    ) && !matches!(&e.kind, ExprKind::Number(n) if n.starts_with('-'))
}

pub fn op_text(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Concat => "||",
        BinaryOp::Eq => "=",
        BinaryOp::Ne => "<>",
        BinaryOp::Lt => "<",
        BinaryOp::Le => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::Ge => ">=",
        BinaryOp::And => "AND",
        BinaryOp::Or => "OR",
    }
}

/// DATEADD's unit as an interval's: count and unit.
fn interval_unit(unit: &str, line: u32) -> Result<(u32, &'static str)> {
    Ok(match unit {
        "YEAR" => (1, "year"),
        "MONTH" => (1, "month"),
        "WEEK" => (7, "day"),
        "DAY" => (1, "day"),
        "HOUR" => (1, "hour"),
        "MINUTE" => (1, "minute"),
        "SECOND" => (1, "second"),
        "MILLISECOND" => (1, "millisecond"),
        _ => return Err(refuse(&format!("DATEADD({unit})"), line, "not translated")),
    })
}

/// Firebird's words for a moment ('NOW', 'TODAY', ...) read when the
/// statement runs; PostgreSQL's 'now' literal would be read once, when
/// the view or plan is made.
pub fn special_date(s: &str, type_name: &str) -> Option<String> {
    let word = s.trim().to_ascii_uppercase();
    let day = match word.as_str() {
        "NOW" => {
            return Some(match type_name {
                "DATE" => "CURRENT_DATE".into(),
                "TIME" => "LOCALTIME".into(),
                "TIMESTAMP" => "LOCALTIMESTAMP".into(),
                _ => return None,
            });
        }
        "TODAY" => "CURRENT_DATE",
        "TOMORROW" => "(CURRENT_DATE + 1)",
        "YESTERDAY" => "(CURRENT_DATE - 1)",
        _ => return None,
    };
    match type_name {
        "DATE" => Some(day.to_string()),
        "TIMESTAMP" => Some(format!("CAST({day} AS timestamp)")),
        _ => None,
    }
}

/// Firebird reads `dd.mm.yyyy` day first, PostgreSQL (MDY) month first:
/// such a literal becomes ISO.
fn dotted_date(s: &str) -> Option<String> {
    let t = s.trim();
    let (date, rest) = match t.find(' ') {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let parts: Vec<&str> = date.split('.').collect();
    if parts.len() != 3
        || !parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let (d, m, y) = (parts[0], parts[1], parts[2]);
    if y.len() != 4 {
        return None;
    }
    Some(format!("{y}-{m:0>2}-{d:0>2}{rest}"))
}
