//! Firebird SQL and PSQL → PostgreSQL: CHECK, default and computed
//! expressions, view queries, triggers, procedures and functions.
//!
//! Shaped like sqlglot: a tokenizer ([`lexer`]), a parser into one
//! typed tree ([`ast`]), and a PostgreSQL generator ([`sql`] for
//! expressions and queries, [`plpgsql`] for PSQL). No text is rewritten
//! by pattern: what is not read, or has no PostgreSQL form that means
//! the same, comes back as an [`Untranslated`] naming the construct and
//! the line it stopped at, never as text that only looks right.
//!
//! ```
//! use fbunload_psql::{ExprContext, translate_expression};
//! let ctx = ExprContext::new().for_domain();
//! assert_eq!(
//!     translate_expression("CHECK (VALUE STARTING WITH 'V')", &ctx).unwrap(),
//!     "starts_with(CAST(VALUE AS text), CAST('V' AS text))"
//! );
//! ```

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod plpgsql;
pub mod sql;

use ast::{Query, SetExpr, TableRef};
use parser::Parser;

pub use plpgsql::{
    key_generator, routine_calls, routine_input_types, routine_tables, translate_function,
    translate_procedure, translate_trigger, trigger_name, KeyGenerator,
};

/// What was not translated: the construct, the line of the source it
/// stopped at (1-based), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untranslated {
    pub construct: String,
    pub line: u32,
    pub reason: String,
}

impl std::fmt::Display for Untranslated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.construct, self.reason)
    }
}

impl std::error::Error for Untranslated {}

/// What a Firebird name names, for [`ExprContext::with_names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Column,
    Table,
    Sequence,
    /// A procedure or function, as called or selected from.
    Procedure,
    /// A domain used as a type.
    Domain,
    /// The function a trigger runs.
    TriggerFunction,
}

/// A Firebird exception as PostgreSQL raises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    pub message: String,
    pub sqlstate: String,
}

/// Firebird name → PostgreSQL text, by what it names.
pub type NameFn<'a> = Box<dyn Fn(NameKind, &str) -> String + 'a>;
/// A Firebird exception by name.
pub type ExceptionFn<'a> = Box<dyn Fn(&str) -> Option<Exception> + 'a>;

/// How the translation spells what it names, and what `VALUE` means.
pub struct ExprContext<'a> {
    /// `VALUE` is a domain's value (a domain's CHECK), not a column.
    pub domain_value: bool,
    /// A Firebird name (as the catalog keeps it: unquoted names upper
    /// case) → the PostgreSQL text that names it, quoted and, for tables,
    /// sequences and routines, qualified as the caller needs.
    pub names: NameFn<'a>,
    /// A Firebird exception by name, for `EXCEPTION name` and
    /// `WHEN EXCEPTION name`.
    pub exceptions: ExceptionFn<'a>,
    /// The schema routines run in (`SET search_path`): their bodies are
    /// text, read when they run, after the load has renamed its schema.
    pub search_path: Option<String>,
    /// A column's Firebird type (`TIMESTAMP`), where known: Firebird's
    /// date arithmetic (a timestamp minus a timestamp is days) is then
    /// spelled out for columns too.
    pub column_types: ColumnTypeFn<'a>,
    /// Whether a name is a PSQL function of the database (called as
    /// `name(args)`, spelled by `names` as a [`NameKind::Procedure`]).
    pub functions: FunctionFn<'a>,
    /// A table's columns and primary key, where known.
    pub tables: TableFn<'a>,
    /// A routine's inputs, where known: Firebird converts a call's
    /// arguments to its parameters' types (a VARCHAR to an INTEGER),
    /// PostgreSQL finds no function for arguments of other types.
    pub routine_inputs: RoutineInputsFn<'a>,
}

/// Whether a name is a user's PSQL function.
pub type FunctionFn<'a> = Box<dyn Fn(&str) -> bool + 'a>;

/// A table's columns (those a row is written with, in order) and
/// primary key, for `UPDATE OR INSERT` without a column list or
/// `MATCHING`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableShape {
    pub columns: Vec<String>,
    pub primary_key: Vec<String>,
}

/// A procedure's or PSQL function's input parameters, each as the
/// PostgreSQL type a call converts its argument to (`None`: left as it
/// is), by its Firebird name.
pub type RoutineInputsFn<'a> = Box<dyn Fn(&str) -> Option<Vec<Option<String>>> + 'a>;

/// A table's shape by its Firebird name.
pub type TableFn<'a> = Box<dyn Fn(&str) -> Option<TableShape> + 'a>;

/// A column's Firebird type by its name.
pub type ColumnTypeFn<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

impl Default for ExprContext<'_> {
    fn default() -> Self {
        ExprContext {
            domain_value: false,
            names: Box::new(default_name),
            exceptions: Box::new(|_| None),
            search_path: None,
            column_types: Box::new(|_| None),
            functions: Box::new(|_| false),
            tables: Box::new(|_| None),
            routine_inputs: Box::new(|_| None),
        }
    }
}

impl<'a> ExprContext<'a> {
    /// Names as fbunload's PostgreSQL destination spells them
    /// ([`pg_name`], quoted), unqualified; no exceptions known.
    pub fn new() -> Self {
        Self::default()
    }

    /// `VALUE` is the domain's value.
    pub fn for_domain(mut self) -> Self {
        self.domain_value = true;
        self
    }

    pub fn with_names(mut self, names: impl Fn(NameKind, &str) -> String + 'a) -> Self {
        self.names = Box::new(names);
        self
    }

    pub fn with_exceptions(mut self, exceptions: impl Fn(&str) -> Option<Exception> + 'a) -> Self {
        self.exceptions = Box::new(exceptions);
        self
    }

    pub fn with_column_types(mut self, types: impl Fn(&str) -> Option<String> + 'a) -> Self {
        self.column_types = Box::new(types);
        self
    }

    pub fn with_functions(mut self, functions: impl Fn(&str) -> bool + 'a) -> Self {
        self.functions = Box::new(functions);
        self
    }

    pub fn with_tables(mut self, tables: impl Fn(&str) -> Option<TableShape> + 'a) -> Self {
        self.tables = Box::new(tables);
        self
    }

    pub fn with_routine_inputs(
        mut self,
        inputs: impl Fn(&str) -> Option<Vec<Option<String>>> + 'a,
    ) -> Self {
        self.routine_inputs = Box::new(inputs);
        self
    }

    pub fn with_search_path(mut self, schema: &str) -> Self {
        self.search_path = Some(schema.to_string());
        self
    }
}

/// The default spelling: [`pg_name`], quoted; a trigger's function gets
/// `_trigger` after the trigger's name (functions and procedures share
/// PostgreSQL's namespace, triggers and procedures do not share
/// Firebird's).
pub fn default_name(kind: NameKind, name: &str) -> String {
    match kind {
        NameKind::TriggerFunction => quote(&format!("{}_trigger", pg_name(name))),
        _ => quote(&pg_name(name)),
    }
}

/// The PostgreSQL name of a Firebird name: an unquoted (regular) name,
/// upper case in Firebird's catalog, becomes the lower case that the same
/// unquoted name means in PostgreSQL; any other name is kept as it is.
/// fbunload's PostgreSQL destination names what it loads by this rule.
pub fn pg_name(name: &str) -> String {
    let regular = name.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'$');
    if regular {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    }
}

/// A quoted PostgreSQL identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The SQLSTATE a Firebird exception raises in PostgreSQL: class `FB`
/// (no class of PostgreSQL's or the standard's) and the exception's
/// number in base 36, so it stays the same from run to run.
pub fn exception_sqlstate(number: i64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut n = number.rem_euclid(36 * 36 * 36);
    let mut code = [b'0'; 3];
    for slot in code.iter_mut().rev() {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    format!("FB{}", String::from_utf8_lossy(&code))
}

/// Strips the word a catalog keeps before an expression: `CHECK`,
/// `DEFAULT`, `COMPUTED [BY]`, a partial index's `WHERE`.
fn expression_parser(source: &str) -> Result<Parser, Untranslated> {
    let mut p = Parser::new(source)?;
    p.skip_lead_words();
    Ok(p)
}

/// A CHECK, default or computed expression (the catalog's text, with
/// or without its leading `CHECK`/`DEFAULT`/`COMPUTED BY`), as a
/// PostgreSQL expression.
pub fn translate_expression(source: &str, ctx: &ExprContext) -> Result<String, Untranslated> {
    let mut p = expression_parser(source)?;
    let e = p.expr()?;
    p.expect_end()?;
    sql::Gen::new(ctx).expr(&e)
}

/// A computed column's expression, where PostgreSQL can keep it as
/// `GENERATED ALWAYS AS (...) STORED`: it reads only its own row and
/// gives the same value every time; otherwise refused, saying what
/// makes it vary.
pub fn translate_computed(source: &str, ctx: &ExprContext) -> Result<String, Untranslated> {
    row_expression(
        source,
        ctx,
        "not deterministic or reads other rows: PostgreSQL stores a generated column's value \
         once; compute it in a view or query instead",
    )
}

/// An expression index's expression (`COMPUTED BY (...)`) or a partial
/// index's condition (`WHERE ...`), where PostgreSQL can index it: it
/// reads only its own row and gives the same value every time;
/// otherwise refused, saying what makes it vary.
pub fn translate_index_expression(source: &str, ctx: &ExprContext) -> Result<String, Untranslated> {
    row_expression(
        source,
        ctx,
        "not deterministic or reads other rows: PostgreSQL indexes only what a row alone \
         gives, the same every time",
    )
}

/// An expression of one row's columns that gives the same value every
/// time, or `varies` as the reason it is refused.
fn row_expression(source: &str, ctx: &ExprContext, varies: &str) -> Result<String, Untranslated> {
    let mut p = expression_parser(source)?;
    let e = p.expr()?;
    p.expect_end()?;
    if let Some((what, line)) = varying(&e) {
        return Err(Untranslated {
            construct: what,
            line,
            reason: varies.into(),
        });
    }
    sql::Gen::new(ctx).expr(&e)
}

/// A Firebird type as the catalog spells it (`VARCHAR(37) CHARACTER SET
/// UTF8`, `NUMERIC(18,2)`) as PostgreSQL's.
pub fn translate_type(source: &str, ctx: &ExprContext) -> Result<String, Untranslated> {
    let mut p = Parser::new(source)?;
    let line = p.line();
    let t = p.data_type()?;
    p.expect_end()?;
    sql::Gen::new(ctx).data_type(&t, line)
}

/// A view's SELECT (the catalog's `RDB$VIEW_SOURCE`) as PostgreSQL's.
pub fn translate_view(select_source: &str, ctx: &ExprContext) -> Result<String, Untranslated> {
    let mut p = Parser::new(select_source)?;
    let q = p.query()?;
    p.expect_end()?;
    sql::Gen::new(ctx).query(&q)
}

/// The first construct that makes an expression vary between calls or
/// read beyond its row, with its line.
fn varying(e: &ast::Expr) -> Option<(String, u32)> {
    use ast::ExprKind as K;
    let here = |s: &str| Some((s.to_string(), e.line));
    match &e.kind {
        K::Context(c) => here(c),
        K::Subquery(_) | K::Exists(_) | K::Quantified(..) => here("a subquery"),
        K::NextValue(..) => here("a sequence"),
        K::Param(_) => here("a parameter"),
        K::Function { name, args, .. } => {
            if matches!(
                name.as_str(),
                "RAND" | "GEN_UUID" | "RDB$GET_CONTEXT" | "RDB$SET_CONTEXT"
            ) {
                return here(name);
            }
            args.iter().find_map(varying)
        }
        K::Str(s) if sql::special_date(s, "TIMESTAMP").is_some() => here(&format!("'{s}'")),
        K::Cast(x, _) => varying(x),
        K::Unary(_, x) | K::IsNull(x, _) | K::IsBool(x, _, _) | K::Extract(_, x) => varying(x),
        K::Binary(_, a, b) | K::Distinct(a, b, _) | K::Position(a, b) => {
            varying(a).or_else(|| varying(b))
        }
        K::DateAdd(_, a, b) | K::DateDiff(_, a, b) => varying(a).or_else(|| varying(b)),
        K::Between(a, b, c, _) => varying(a).or_else(|| varying(b)).or_else(|| varying(c)),
        K::In(x, list, _) => varying(x).or_else(|| match list {
            ast::InList::Values(v) => v.iter().find_map(varying),
            ast::InList::Query(_) => here("a subquery"),
        }),
        K::Match {
            value,
            pattern,
            escape,
            ..
        } => varying(value)
            .or_else(|| varying(pattern))
            .or_else(|| escape.as_deref().and_then(varying)),
        K::Case {
            operand,
            whens,
            otherwise,
        } => operand
            .as_deref()
            .and_then(varying)
            .or_else(|| {
                whens
                    .iter()
                    .find_map(|(a, b)| varying(a).or_else(|| varying(b)))
            })
            .or_else(|| otherwise.as_deref().and_then(varying)),
        K::Substring(a, b, c) => varying(a)
            .or_else(|| varying(b))
            .or_else(|| c.as_deref().and_then(varying)),
        K::Trim(_, w, x) => w.as_deref().and_then(varying).or_else(|| varying(x)),
        K::DayOf(_, _, x) => varying(x),
        K::Element(x, subscripts) => varying(x).or_else(|| subscripts.iter().find_map(varying)),
        _ => None,
    }
}

/// The tables, views and procedures a view's SELECT reads (Firebird
/// names), for creating views after what they read.
pub fn view_reads(select_source: &str) -> Result<Vec<String>, Untranslated> {
    let mut p = Parser::new(select_source)?;
    let q = p.query()?;
    let mut names = Vec::new();
    query_reads(&q, &mut names);
    names.sort();
    names.dedup();
    Ok(names)
}

/// The procedures a query selects from.
pub(crate) fn query_procedures(q: &Query) -> Vec<String> {
    query_relations(q, true)
}

/// The tables (and views) a query reads, CTEs included.
pub(crate) fn query_tables(q: &Query) -> Vec<String> {
    query_relations(q, false)
}

fn query_relations(q: &Query, procedures: bool) -> Vec<String> {
    fn table(t: &TableRef, procedures: bool, out: &mut Vec<String>) {
        match t {
            TableRef::Procedure { name, .. } if procedures => out.push(name.text.clone()),
            TableRef::Table { name, .. } if !procedures => out.push(name.text.clone()),
            TableRef::Derived { query, .. } => out.extend(query_relations(query, procedures)),
            TableRef::Join { left, right, .. } => {
                table(left, procedures, out);
                table(right, procedures, out);
            }
            _ => {}
        }
    }
    fn set(s: &SetExpr, procedures: bool, out: &mut Vec<String>) {
        match s {
            SetExpr::Select(sel) => sel.from.iter().for_each(|t| table(t, procedures, out)),
            SetExpr::Union(a, b, _) => {
                set(a, procedures, out);
                set(b, procedures, out);
            }
            SetExpr::Nested(q) => out.extend(query_relations(q, procedures)),
        }
    }
    let mut out = Vec::new();
    for cte in &q.with {
        out.extend(query_relations(&cte.query, procedures));
    }
    set(&q.body, procedures, &mut out);
    out
}

fn query_reads(q: &Query, out: &mut Vec<String>) {
    for cte in &q.with {
        query_reads(&cte.query, out);
    }
    set_reads(&q.body, out);
}

fn set_reads(s: &SetExpr, out: &mut Vec<String>) {
    match s {
        SetExpr::Select(sel) => {
            for t in &sel.from {
                table_reads(t, out);
            }
        }
        SetExpr::Union(a, b, _) => {
            set_reads(a, out);
            set_reads(b, out);
        }
        SetExpr::Nested(q) => query_reads(q, out),
    }
}

fn table_reads(t: &TableRef, out: &mut Vec<String>) {
    match t {
        TableRef::Table { name, .. } | TableRef::Procedure { name, .. } => {
            out.push(name.text.clone())
        }
        TableRef::Derived { query, .. } => query_reads(query, out),
        TableRef::Join { left, right, .. } => {
            table_reads(left, out);
            table_reads(right, out);
        }
    }
}

#[cfg(test)]
mod tests;
