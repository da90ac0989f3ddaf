//! PSQL → PL/pgSQL: a trigger becomes a trigger function and its
//! trigger, a procedure a function (set-returning where it SUSPENDs,
//! with OUT parameters where it only returns values), a PSQL function
//! a function.
//!
//! The input is the object's Firebird DDL (`CREATE TRIGGER ... AS ...`,
//! `CREATE PROCEDURE name (...) RETURNS (...) AS ...`), as isql shows
//! it or as fbunload rebuilds it from the catalog, so one text carries
//! the header and the body.
//!
//! Where PL/pgSQL means something else by the same words, the
//! generated code spells Firebird's meaning out:
//! - a singleton `SELECT ... INTO` leaves its targets alone when no row
//!   comes and fails on a second row (PL/pgSQL's sets NULLs and takes
//!   the first): it becomes a loop over a record that counts;
//! - a `:name` in SQL is always the variable: it is qualified by the
//!   function's name (parameters) or the body's label (variables), and
//!   `#variable_conflict use_column` keeps bare names columns, as
//!   Firebird reads them;
//! - NULLs sort first ascending (see [`crate::sql`]);
//! - an exception raises `RAISE EXCEPTION` with its message and a
//!   SQLSTATE of its own ([`crate::exception_sqlstate`]).

use crate::ast::*;
use crate::parser::Parser;
use crate::sql::{refuse, special_date, Gen, Scope};
use crate::{pg_name, quote, ExprContext, NameKind, Untranslated};

type Result<T> = std::result::Result<T, Untranslated>;

/// The label of a routine body's outermost block: its variables are
/// named through it.
const LOCALS: &str = "fb_local";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Insert,
    Update,
    Delete,
}

struct TriggerHeader {
    name: Name,
    table: Name,
    before: bool,
    events: Vec<Event>,
    position: i64,
    active: bool,
}

struct Param {
    name: Name,
    data_type: DataType,
    default: Option<Expr>,
    line: u32,
}

fn create_prefix(p: &mut Parser, what: &str) -> Result<()> {
    if p.eat_word_pub("RECREATE") {
    } else if p.eat_word_pub("CREATE") {
        if p.eat_word_pub("OR") {
            p.expect_word_pub("ALTER")?;
        }
    } else if !p.eat_word_pub("ALTER") {
        return Err(p.unexpected("CREATE"));
    }
    p.expect_word_pub(what)
}

fn trigger_header(p: &mut Parser) -> Result<TriggerHeader> {
    create_prefix(p, "TRIGGER")?;
    let name = p.name()?;
    let mut table = None;
    if p.eat_word_pub("FOR") {
        table = Some(p.name()?);
    }
    let mut active = true;
    if p.eat_word_pub("INACTIVE") {
        active = false;
    } else {
        p.eat_word_pub("ACTIVE");
    }
    let before = if p.eat_word_pub("BEFORE") {
        true
    } else if p.eat_word_pub("AFTER") {
        false
    } else {
        return Err(p.unsupported(
            "a database or DDL trigger",
            "only table triggers (BEFORE/AFTER INSERT/UPDATE/DELETE) are translated",
        ));
    };
    let mut events = Vec::new();
    loop {
        let e = if p.eat_word_pub("INSERT") {
            Event::Insert
        } else if p.eat_word_pub("UPDATE") {
            Event::Update
        } else if p.eat_word_pub("DELETE") {
            Event::Delete
        } else {
            return Err(p.unsupported(
                "a database or DDL trigger",
                "only table triggers (BEFORE/AFTER INSERT/UPDATE/DELETE) are translated",
            ));
        };
        events.push(e);
        if !p.eat_word_pub("OR") {
            break;
        }
    }
    let mut position = 0;
    if p.eat_word_pub("POSITION") {
        position = p.number()?;
    }
    if p.eat_word_pub("ON") {
        table = Some(p.name()?);
    }
    let Some(table) = table else {
        return Err(p.unexpected("FOR table"));
    };
    if p.is_word_pub("EXTERNAL") || p.is_word_pub("ENGINE") {
        return Err(p.unsupported("an external trigger", "its code is outside the database"));
    }
    Ok(TriggerHeader {
        name,
        table,
        before,
        events,
        position,
        active,
    })
}

fn params(p: &mut Parser) -> Result<Vec<Param>> {
    let mut out = Vec::new();
    if !p.eat_sym_pub("(") {
        return Ok(out);
    }
    if p.eat_sym_pub(")") {
        return Ok(out);
    }
    loop {
        let line = p.line();
        let name = p.name()?;
        let data_type = p.data_type()?;
        if p.eat_word_pub("NOT") {
            p.expect_word_pub("NULL")?;
        }
        let default = if p.eat_sym_pub("=") || p.eat_word_pub("DEFAULT") {
            Some(p.expr()?)
        } else {
            None
        };
        out.push(Param {
            name,
            data_type,
            default,
            line,
        });
        if !p.eat_sym_pub(",") {
            break;
        }
    }
    p.expect_sym_pub(")")?;
    Ok(out)
}

fn skip_security(p: &mut Parser) -> Result<()> {
    if p.is_word_pub("SQL") {
        return Err(p.unsupported("SQL SECURITY", "not translated"));
    }
    if p.is_word_pub("EXTERNAL") {
        return Err(p.unsupported("an external routine", "its code is outside the database"));
    }
    Ok(())
}

/// A generated key: a `BEFORE INSERT` trigger that only does
/// `IF (NEW.X IS NULL) THEN NEW.X = GEN_ID(G, 1)` (or `NEXT VALUE FOR
/// G`). PostgreSQL says the same with `DEFAULT nextval(G)` and the
/// sequence `OWNED BY` the column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGenerator {
    pub table: String,
    pub column: String,
    pub sequence: String,
}

/// The generated key a trigger's DDL sets, if that is all it does.
pub fn key_generator(trigger_ddl: &str) -> Option<KeyGenerator> {
    let mut p = Parser::new(trigger_ddl).ok()?;
    let h = trigger_header(&mut p).ok()?;
    let body = p.body().ok()?;
    if !h.before || h.events != [Event::Insert] || !body.variables.is_empty() {
        return None;
    }
    let mut statements = &body.block.statements;
    if !body.block.handlers.is_empty() {
        return None;
    }
    // One statement, perhaps in a block of its own.
    while let [Stmt {
        kind: StmtKind::Block(b),
        ..
    }] = statements.as_slice()
    {
        if !b.handlers.is_empty() {
            return None;
        }
        statements = &b.statements;
    }
    let [Stmt {
        kind: StmtKind::If(cond, then, None),
        ..
    }] = statements.as_slice()
    else {
        return None;
    };
    let ExprKind::IsNull(tested, false) = &cond.kind else {
        return None;
    };
    let new_column = |e: &Expr| match &e.kind {
        ExprKind::Column(parts) => match parts.as_slice() {
            [n, c] if !n.quoted && n.text == "NEW" => Some(c.text.clone()),
            _ => None,
        },
        _ => None,
    };
    let column = new_column(tested)?;
    let mut then = then.as_ref();
    while let StmtKind::Block(b) = &then.kind {
        match b.statements.as_slice() {
            [one] if b.handlers.is_empty() => then = one,
            _ => return None,
        }
    }
    let StmtKind::Assign(target, value) = &then.kind else {
        return None;
    };
    if new_column(target)? != column {
        return None;
    }
    let ExprKind::NextValue(sequence, step) = &value.kind else {
        return None;
    };
    match step.as_deref().map(|s| &s.kind) {
        None => {}
        Some(ExprKind::Number(n)) if n == "1" => {}
        _ => return None,
    }
    Some(KeyGenerator {
        table: h.table.text,
        column,
        sequence: sequence.text.clone(),
    })
}

/// The PostgreSQL name of a trigger: its position first, so that
/// PostgreSQL (which fires a table's triggers in name order) fires them
/// in Firebird's order (position, then name).
pub fn trigger_name(name: &str, position: i64) -> String {
    quote(&format!(
        "{:05}_{}",
        position.clamp(0, 99999),
        pg_name(name)
    ))
}

/// A table trigger's DDL (`CREATE TRIGGER name FOR table [ACTIVE]
/// BEFORE INSERT OR UPDATE POSITION n AS ...`) → its trigger function
/// and `CREATE TRIGGER` (and `DISABLE TRIGGER` where it is inactive).
pub fn translate_trigger(ddl: &str, ctx: &ExprContext) -> Result<Vec<String>> {
    let mut p = Parser::new(ddl)?;
    let h = trigger_header(&mut p)?;
    let body = p.body()?;
    p.expect_end()?;
    let function = (ctx.names)(NameKind::TriggerFunction, &h.name.text);
    let table = (ctx.names)(NameKind::Table, &h.table.text);
    let mut r = Routine::new(
        ctx,
        RoutineKind::Trigger {
            before: h.before,
            events: h.events.clone(),
        },
    );
    r.scope.trigger = true;
    let code = r.body(&body, ddl)?;
    let mut out = vec![format!(
        "CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql{} AS {}",
        search_path(ctx),
        dollar_quote(&code)
    )];
    let events: Vec<&str> = h
        .events
        .iter()
        .map(|e| match e {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        })
        .collect();
    let trigger = trigger_name(&h.name.text, h.position);
    out.push(format!(
        "CREATE TRIGGER {trigger} {} {} ON {table} FOR EACH ROW EXECUTE FUNCTION {function}()",
        if h.before { "BEFORE" } else { "AFTER" },
        events.join(" OR ")
    ));
    if !h.active {
        out.push(format!("ALTER TABLE {table} DISABLE TRIGGER {trigger}"));
    }
    Ok(out)
}

/// A procedure's DDL (`CREATE PROCEDURE name (in) RETURNS (out) AS
/// ...`) → one `CREATE FUNCTION`: set-returning (`RETURNS TABLE`) where
/// the body SUSPENDs, with OUT parameters where it only returns values.
pub fn translate_procedure(ddl: &str, ctx: &ExprContext) -> Result<Vec<String>> {
    let mut p = Parser::new(ddl)?;
    create_prefix(&mut p, "PROCEDURE")?;
    let name = p.name()?;
    let inputs = params(&mut p)?;
    let outputs = if p.eat_word_pub("RETURNS") {
        params(&mut p)?
    } else {
        Vec::new()
    };
    skip_security(&mut p)?;
    let body = p.body()?;
    p.expect_end()?;
    // SUSPEND in a procedure without outputs (EMPLOYEE's SHIP_ORDER)
    // returns no row: it ends the procedure, as EXIT.
    let selectable = suspends(&body.block) && !outputs.is_empty();
    let kind = if selectable {
        RoutineKind::Selectable
    } else {
        RoutineKind::Executable
    };
    let mut r = Routine::new(ctx, kind);
    let label = quote(&pg_name(&name.text));
    for param in inputs.iter().chain(&outputs) {
        r.scope.variables.insert(
            param.name.text.clone(),
            format!("{label}.{}", quote(&pg_name(&param.name.text))),
        );
    }
    let gen = Gen::new(ctx);
    let mut args = Vec::new();
    for param in &inputs {
        let mut a = format!(
            "{} {}",
            quote(&pg_name(&param.name.text)),
            input_type(&gen, param)?
        );
        if let Some(d) = &param.default {
            a += &format!(" DEFAULT {}", gen.expr(d)?);
        }
        args.push(a);
        r.inputs.push((
            param.name.text.clone(),
            gen.data_type(&param.data_type, param.line)?,
        ));
    }
    let mut outs = Vec::new();
    for param in &outputs {
        let data_type = gen.data_type(&param.data_type, param.line)?;
        let name = quote(&pg_name(&param.name.text));
        r.outputs
            .insert(format!("{label}.{name}"), data_type.clone());
        r.scope
            .variable_types
            .insert(param.name.text.clone(), data_type.clone());
        outs.push(format!("{name} {data_type}"));
    }
    let returns = if selectable {
        format!(" RETURNS TABLE ({})", outs.join(", "))
    } else if outs.is_empty() {
        " RETURNS void".to_string()
    } else {
        args.extend(outs.iter().map(|o| format!("OUT {o}")));
        String::new()
    };
    let code = r.body(&body, ddl)?;
    Ok(vec![format!(
        "CREATE FUNCTION {}({}){returns} LANGUAGE plpgsql{} AS {}",
        (ctx.names)(NameKind::Procedure, &name.text),
        args.join(", "),
        search_path(ctx),
        dollar_quote(&code)
    )])
}

/// A PSQL function's DDL (`CREATE FUNCTION name (in) RETURNS type AS
/// ...`) → `CREATE FUNCTION`.
pub fn translate_function(ddl: &str, ctx: &ExprContext) -> Result<Vec<String>> {
    let mut p = Parser::new(ddl)?;
    create_prefix(&mut p, "FUNCTION")?;
    let name = p.name()?;
    let inputs = params(&mut p)?;
    p.expect_word_pub("RETURNS")?;
    let line = p.line();
    let returns = p.data_type()?;
    let deterministic = p.eat_word_pub("DETERMINISTIC");
    skip_security(&mut p)?;
    let body = p.body()?;
    p.expect_end()?;
    let mut r = Routine::new(ctx, RoutineKind::Function);
    r.returns = Some(Gen::new(ctx).data_type(&returns, line)?);
    let label = quote(&pg_name(&name.text));
    for param in &inputs {
        r.scope.variables.insert(
            param.name.text.clone(),
            format!("{label}.{}", quote(&pg_name(&param.name.text))),
        );
    }
    let gen = Gen::new(ctx);
    let mut args = Vec::new();
    for param in &inputs {
        let mut a = format!(
            "{} {}",
            quote(&pg_name(&param.name.text)),
            input_type(&gen, param)?
        );
        if let Some(d) = &param.default {
            a += &format!(" DEFAULT {}", gen.expr(d)?);
        }
        args.push(a);
        r.inputs.push((
            param.name.text.clone(),
            gen.data_type(&param.data_type, param.line)?,
        ));
    }
    let code = r.body(&body, ddl)?;
    Ok(vec![format!(
        "CREATE FUNCTION {}({}) RETURNS {} LANGUAGE plpgsql{}{} AS {}",
        (ctx.names)(NameKind::Procedure, &name.text),
        args.join(", "),
        gen.data_type(&returns, line)?,
        if deterministic { " IMMUTABLE" } else { "" },
        search_path(ctx),
        dollar_quote(&code)
    )])
}

/// The types a call converts its arguments to, from the callee's DDL
/// (`CREATE PROCEDURE name (a CHAR(3), b SMALLINT) ...`): the input's
/// type without its length or scale (`bpchar`, `numeric`): a longer
/// CHAR argument must reach the routine, which refuses it as Firebird
/// does, not be cut by the cast. A domain or `TYPE OF` parameter is
/// left alone (`None`).
pub fn routine_input_types(ddl: &str) -> Result<Vec<Option<String>>> {
    let mut p = Parser::new(ddl)?;
    if create_prefix(&mut p, "PROCEDURE").is_err() {
        p = Parser::new(ddl)?;
        create_prefix(&mut p, "FUNCTION")?;
    }
    p.name()?;
    let ctx = ExprContext::new();
    let gen = Gen::new(&ctx);
    params(&mut p)?
        .iter()
        .map(|param| {
            Ok(match &param.data_type {
                DataType::Builtin { name, .. } => {
                    let t = input_type(&gen, param)?;
                    Some(match name.as_str() {
                        "CHAR" | "CHARACTER" | "NCHAR" if !t.starts_with("bytea") => {
                            "bpchar".to_string()
                        }
                        _ => t.split('(').next().unwrap_or(&t).to_string(),
                    })
                }
                _ => None,
            })
        })
        .collect()
}

/// An input parameter's type. SMALLINT takes an integer: PostgreSQL
/// reads `f(2)` as an integer argument and would not find a function of
/// a smallint (Firebird narrows it).
fn input_type(gen: &Gen, param: &Param) -> Result<String> {
    match &param.data_type {
        DataType::Builtin { name, .. } if name == "SMALLINT" => Ok("integer".into()),
        t => gen.data_type(t, param.line),
    }
}

/// The settings a routine runs with: its schema, and string literals
/// read as written (the body's `'a\b'` is text read on each call, under
/// the caller's settings otherwise).
fn search_path(ctx: &ExprContext) -> String {
    match &ctx.search_path {
        Some(s) => format!(
            " SET search_path TO {} SET standard_conforming_strings TO on",
            quote(s)
        ),
        None => String::new(),
    }
}

fn dollar_quote(code: &str) -> String {
    let mut tag = "$fb$".to_string();
    let mut n = 0;
    while code.contains(&tag) {
        n += 1;
        tag = format!("$fb{n}$");
    }
    format!("{tag}\n{code}{tag}")
}

fn suspends(block: &Block) -> bool {
    fn stmt(s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Suspend => true,
            StmtKind::If(_, a, b) => stmt(a) || b.as_deref().is_some_and(stmt),
            StmtKind::While(_, _, b)
            | StmtKind::ForSelect(_, _, _, _, b)
            | StmtKind::ForExecute(_, _, b)
            | StmtKind::Autonomous(b) => stmt(b),
            StmtKind::Block(b) => suspends(b),
            _ => false,
        }
    }
    block.statements.iter().any(stmt) || block.handlers.iter().any(|h| stmt(&h.body))
}

enum RoutineKind {
    Trigger { before: bool, events: Vec<Event> },
    Selectable,
    Executable,
    Function,
}

struct Routine<'c, 'a> {
    ctx: &'c ExprContext<'a>,
    kind: RoutineKind,
    scope: Scope,
    out: String,
    /// Records declared for loops over a query (`fb_row_1`, ...).
    records: u32,
    /// `fb_rows`, the singleton SELECT's count, is declared.
    counts_rows: bool,
    /// Input parameters and their declared PostgreSQL types.
    inputs: Vec<(String, String)>,
    /// Output parameters' references and their declared types.
    outputs: std::collections::HashMap<String, String>,
    /// A function's declared result type.
    returns: Option<String>,
    /// Cursors by Firebird name: the PL/pgSQL variable and how many
    /// columns the query gives.
    cursors: std::collections::HashMap<String, (String, usize)>,
    /// The cursors' variables and declarations (after the variables
    /// their queries read).
    cursor_declarations: Vec<(String, String)>,
    /// Cursors an UPDATE or DELETE names in `WHERE CURRENT OF`: their
    /// queries lock the rows (`FOR UPDATE`), which lets PostgreSQL find
    /// the row through a sort or a join.
    positioned: std::collections::HashSet<String>,
}

impl<'c, 'a> Routine<'c, 'a> {
    fn new(ctx: &'c ExprContext<'a>, kind: RoutineKind) -> Self {
        Routine {
            ctx,
            kind,
            scope: Scope::default(),
            out: String::new(),
            records: 0,
            counts_rows: false,
            inputs: Vec::new(),
            outputs: Default::default(),
            returns: None,
            cursors: Default::default(),
            cursor_declarations: Vec::new(),
            positioned: Default::default(),
        }
    }

    fn gen(&self) -> Gen<'c, 'a> {
        let mut g = Gen::new(self.ctx);
        g.scope = self.scope.clone();
        g
    }

    fn sql_gen(&self) -> Gen<'c, 'a> {
        let mut g = self.gen();
        g.scope.sql = true;
        g
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// The whole body: label, declarations, statements, the ending.
    fn body(&mut self, body: &Body, source: &str) -> Result<String> {
        self.scope.row_count = crate::lexer::tokenize(source)?
            .iter()
            .any(|t| matches!(&t.tok, crate::lexer::Tok::Word(w) if w == "ROW_COUNT"));
        let mut declarations = Vec::new();
        let gen = self.gen();
        // Inputs are copied into variables of their declared type:
        // PostgreSQL keeps no length or scale on a parameter, Firebird
        // refuses a CHAR(3) argument of 4 characters and rounds a
        // NUMERIC(9,2) one.
        for (param, data_type) in std::mem::take(&mut self.inputs) {
            let name = quote(&pg_name(&param));
            let from = self.variable(
                &Name {
                    text: param.clone(),
                    quoted: true,
                },
                1,
            )?;
            declarations.push(format!("{name} {data_type} := {from};"));
            self.scope
                .variable_types
                .insert(param.clone(), data_type.clone());
            self.scope
                .variables
                .insert(param, format!("{LOCALS}.{name}"));
        }
        for v in &body.variables {
            let name = quote(&pg_name(&v.name.text));
            let data_type = gen.data_type(&v.data_type, v.line)?;
            self.scope
                .variable_types
                .insert(v.name.text.clone(), data_type.clone());
            let mut d = format!("{name} {data_type}");
            if v.not_null {
                d += " NOT NULL";
            }
            if let Some(e) = &v.default {
                d += &format!(" := {}", self.value(&gen, e)?);
            } else if v.not_null {
                return Err(refuse(
                    &v.name.text,
                    v.line,
                    "a NOT NULL variable without a default",
                ));
            }
            declarations.push(d + ";");
            self.scope
                .variables
                .insert(v.name.text.clone(), format!("{LOCALS}.{name}"));
        }
        let statements = &body.block;
        let mut inner = Routine {
            ctx: self.ctx,
            kind: std::mem::replace(&mut self.kind, RoutineKind::Function),
            scope: self.scope.clone(),
            out: String::new(),
            records: 0,
            counts_rows: false,
            inputs: Vec::new(),
            outputs: std::mem::take(&mut self.outputs),
            returns: self.returns.take(),
            cursors: Default::default(),
            cursor_declarations: Vec::new(),
            positioned: positioned_cursors(statements),
        };
        for c in &body.cursors {
            inner.declare_cursor(&c.name, &c.query, true, c.line)?;
        }
        inner.block(statements, 1)?;
        let ending = inner.ending();
        for e in ending {
            inner.line(1, &e);
        }
        for n in 1..=inner.records {
            declarations.push(format!("fb_row_{n} record;"));
        }
        if inner.counts_rows {
            declarations.push("fb_rows integer;".into());
        }
        if inner.scope.row_count {
            declarations.push("fb_row_count integer := 0;".into());
        }
        declarations.extend(inner.cursor_declarations.iter().map(|(_, d)| d.clone()));
        // A bound cursor's portal is named after its variable unless
        // that is NULL: NULL gives each opening a name of its own, so a
        // routine that calls itself, or another with a cursor of the same
        // name, while one is open does not find the name taken.
        let resets: String = inner
            .cursor_declarations
            .iter()
            .map(|(v, _)| format!("  {v} := NULL;\n"))
            .collect();
        let mut code = String::from("#variable_conflict use_column\n");
        code += &format!("<<{LOCALS}>>\n");
        if !declarations.is_empty() {
            code += "DECLARE\n";
            for d in declarations {
                code += &format!("  {d}\n");
            }
        }
        code += "BEGIN\n";
        code += &resets;
        code += &inner.out;
        code += &format!("END {LOCALS};\n");
        Ok(code)
    }

    /// What ends the routine (also what EXIT does).
    fn ending(&self) -> Vec<String> {
        match &self.kind {
            RoutineKind::Trigger { before: false, .. } => vec!["RETURN NULL;".into()],
            RoutineKind::Trigger {
                before: true,
                events,
            } => {
                if events == &[Event::Delete] {
                    vec!["RETURN OLD;".into()]
                } else if events.contains(&Event::Delete) {
                    vec![
                        "IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;".into(),
                        "RETURN NEW;".into(),
                    ]
                } else {
                    vec!["RETURN NEW;".into()]
                }
            }
            RoutineKind::Selectable | RoutineKind::Executable => Vec::new(),
            RoutineKind::Function => Vec::new(),
        }
    }

    fn block(&mut self, b: &Block, depth: usize) -> Result<()> {
        if b.handlers.is_empty() {
            for s in &b.statements {
                self.stmt(s, depth)?;
            }
            return Ok(());
        }
        self.line(depth, "BEGIN");
        for s in &b.statements {
            self.stmt(s, depth + 1)?;
        }
        self.line(depth, "EXCEPTION");
        for h in &b.handlers {
            let mut conditions = Vec::new();
            for c in &h.conditions {
                conditions.push(self.condition(c, h.line)?);
            }
            self.line(depth + 1, &format!("WHEN {} THEN", conditions.join(" OR ")));
            self.stmt(&h.body, depth + 2)?;
        }
        self.line(depth, "END;");
        Ok(())
    }

    fn condition(&self, c: &Condition, line: u32) -> Result<String> {
        Ok(match c {
            Condition::Any => "OTHERS".into(),
            Condition::Exception(name) => match (self.ctx.exceptions)(&name.text) {
                Some(e) => format!("SQLSTATE '{}'", e.sqlstate),
                None => {
                    return Err(refuse(
                        &format!("WHEN EXCEPTION {}", name.text),
                        line,
                        "an exception not in the catalog",
                    ));
                }
            },
            Condition::SqlCode(code) => match code {
                -530 => "foreign_key_violation".into(),
                -803 => "unique_violation".into(),
                -625 => "not_null_violation".into(),
                -297 => "check_violation".into(),
                -913 => "deadlock_detected".into(),
                // Overflow, division by zero, a string too long.
                -802 => "numeric_value_out_of_range OR division_by_zero OR \
                         string_data_right_truncation"
                    .into(),
                -811 => "cardinality_violation".into(),
                _ => {
                    return Err(refuse(
                        &format!("WHEN SQLCODE {code}"),
                        line,
                        "no PostgreSQL condition known for this SQLCODE",
                    ));
                }
            },
            Condition::GdsCode(code) => match code.to_ascii_lowercase().as_str() {
                "foreign_key" => "foreign_key_violation".into(),
                "unique_key_violation" | "no_dup" => "unique_violation".into(),
                "not_valid" | "check_constraint" => "check_violation".into(),
                "deadlock" | "lock_conflict" | "update_conflict" => {
                    "deadlock_detected OR serialization_failure OR lock_not_available".into()
                }
                "sing_select_err" => "cardinality_violation".into(),
                "arith_except" => "numeric_value_out_of_range OR division_by_zero OR \
                                   string_data_right_truncation"
                    .into(),
                "exception_integer_divide_by_zero" | "exception_float_divide_by_zero" => {
                    "division_by_zero".into()
                }
                _ => {
                    return Err(refuse(
                        &format!("WHEN GDSCODE {code}"),
                        line,
                        "no PostgreSQL condition known for this GDSCODE",
                    ));
                }
            },
            Condition::SqlState(s) => format!("SQLSTATE '{}'", s.replace('\'', "")),
        })
    }

    /// An expression in a value's place: Firebird's 'NOW' and 'TODAY'
    /// there are read when the statement runs, PostgreSQL's when the
    /// plan is made (and a plan is kept for the session).
    fn value(&self, gen: &Gen, e: &Expr) -> Result<String> {
        if let ExprKind::Str(s) = &e.kind {
            let word = s.trim().to_ascii_uppercase();
            if word == "NOW" {
                return Ok("LOCALTIMESTAMP".into());
            }
            if let Some(day) = special_date(s, "DATE") {
                return Ok(day);
            }
        }
        gen.expr(e)
    }

    fn target(&self, e: &Expr) -> Result<String> {
        match &e.kind {
            ExprKind::Param(n) => self.variable(n, e.line),
            ExprKind::Column(parts) => match parts.as_slice() {
                [one] => self.variable(one, e.line),
                [q, c]
                    if self.scope.trigger && !q.quoted && (q.text == "NEW" || q.text == "OLD") =>
                {
                    if q.text == "OLD" {
                        return Err(refuse("OLD", e.line, "OLD is read-only"));
                    }
                    Ok(format!(
                        "NEW.{}",
                        (self.ctx.names)(NameKind::Column, &c.text)
                    ))
                }
                _ => Err(refuse("a target", e.line, "not a variable")),
            },
            _ => Err(refuse("a target", e.line, "not a variable")),
        }
    }

    fn variable(&self, n: &Name, line: u32) -> Result<String> {
        self.scope
            .variables
            .get(&n.text)
            .cloned()
            .ok_or_else(|| refuse(&n.text, line, "not a variable or parameter of the routine"))
    }

    /// A query whose select items are named `fb_1`, `fb_2`, ... so a
    /// loop's record gives them to the targets.
    fn numbered(&self, q: &Query, targets: usize, line: u32) -> Result<String> {
        self.numbered_query(q, Some(targets), line)
            .map(|(text, _)| text)
    }

    /// The same, for as many columns as the query has (a cursor's, whose
    /// targets come with each FETCH), and their number.
    fn numbered_query(
        &self,
        q: &Query,
        targets: Option<usize>,
        line: u32,
    ) -> Result<(String, usize)> {
        let mut q = q.clone();
        let mut body = &mut q.body;
        let count;
        loop {
            match body {
                SetExpr::Select(s) => {
                    count = s.items.len();
                    if targets.is_some_and(|t| t != count)
                        || s.items
                            .iter()
                            .any(|i| matches!(i.expr.kind, ExprKind::Star(_)))
                    {
                        return Err(refuse(
                            "INTO",
                            line,
                            "the number of targets is not the number of columns",
                        ));
                    }
                    for (i, item) in s.items.iter_mut().enumerate() {
                        item.alias = Some(Name {
                            text: format!("fb_{}", i + 1),
                            quoted: true,
                        });
                    }
                    break;
                }
                SetExpr::Union(l, _, _) => body = l,
                SetExpr::Nested(_) => {
                    return Err(refuse("INTO", line, "a nested query with INTO"));
                }
            }
        }
        Ok((self.sql_gen().query(&q)?, count))
    }

    /// A cursor, declared in the DECLARE section (bound: a FOR loop over
    /// it and `WHERE CURRENT OF` need it so).
    /// Its columns are numbered for FETCH ... INTO (`numbered`), or keep
    /// their names for `cursor.column`.
    fn declare_cursor(
        &mut self,
        name: &Name,
        query: &Query,
        numbered: bool,
        line: u32,
    ) -> Result<String> {
        // Loops one after the other may name their cursors alike: each
        // gets a variable of its own.
        let base = format!("fb_cursor_{}", pg_name(&name.text));
        let mut variable = quote(&base);
        let mut n = 1;
        while self.cursor_declarations.iter().any(|(v, _)| *v == variable) {
            n += 1;
            variable = quote(&format!("{base}_{n}"));
        }
        let (mut text, count) = if numbered {
            self.numbered_query(query, None, line)?
        } else {
            (self.sql_gen().query(query)?, 0)
        };
        if self.positioned.contains(&name.text) && query.lock.is_none() {
            text += " FOR UPDATE";
        }
        self.cursor_declarations
            .push((variable.clone(), format!("{variable} CURSOR FOR {text};")));
        self.cursors
            .insert(name.text.clone(), (variable.clone(), count));
        Ok(variable)
    }

    fn cursor(&self, name: &Name, line: u32) -> Result<(String, usize)> {
        self.cursors.get(&name.text).cloned().ok_or_else(|| {
            refuse(
                &name.text,
                line,
                "not a cursor of the routine (FOR SELECT ... AS CURSOR or DECLARE ... CURSOR)",
            )
        })
    }

    /// `WHERE ...` of an UPDATE or DELETE, or nothing.
    fn filter(&self, sql: &Gen, filter: &Filter, line: u32) -> Result<String> {
        Ok(match filter {
            Filter::All => String::new(),
            Filter::Where(f) => format!(" WHERE {}", sql.expr(f)?),
            Filter::CurrentOf(c) => format!(" WHERE CURRENT OF {}", self.cursor(c, line)?.0),
        })
    }

    /// A loop's record for a query's rows: `fb_row_n`.
    fn record(&mut self) -> String {
        self.records += 1;
        format!("fb_row_{}", self.records)
    }

    fn assign_from_record(&mut self, record: &str, targets: &[Expr], depth: usize) -> Result<()> {
        for (i, t) in targets.iter().enumerate() {
            let target = self.target(t)?;
            let value = self.typed(&target, format!("{record}.\"fb_{}\"", i + 1));
            self.line(depth, &format!("{target} := {value};"));
        }
        Ok(())
    }

    /// A value for an output: cast to its declared type, which
    /// PostgreSQL keeps no length or scale of (`tot := 0` would give 0,
    /// Firebird's DECIMAL(12,2) output 0.00).
    fn typed(&self, target: &str, value: String) -> String {
        match self.outputs.get(target) {
            Some(t) => format!("CAST({value} AS {t})"),
            None => value,
        }
    }

    /// An INSERT, UPDATE or DELETE (`text`), its RETURNING, ROW_COUNT.
    fn dml(
        &mut self,
        sql: &Gen,
        text: String,
        returning: Option<&Returning>,
        line: u32,
        depth: usize,
    ) -> Result<()> {
        let (clause, record) = self.returning_clause(sql, returning, line)?;
        self.line(depth, &format!("{text}{clause};"));
        self.row_count(depth);
        self.returned(record, returning, depth)
    }

    /// ` RETURNING e AS "fb_1", ... INTO fb_row_n` and its record.
    fn returning_clause(
        &mut self,
        sql: &Gen,
        returning: Option<&Returning>,
        line: u32,
    ) -> Result<(String, Option<String>)> {
        let Some(r) = returning else {
            return Ok((String::new(), None));
        };
        if r.values.len() != r.into.len() {
            return Err(refuse(
                "INTO",
                line,
                "the number of targets is not the number of columns",
            ));
        }
        let values = r
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| Ok(format!("{} AS \"fb_{}\"", sql.expr(v)?, i + 1)))
            .collect::<Result<Vec<_>>>()?;
        let record = self.record();
        Ok((
            format!(" RETURNING {} INTO {record}", values.join(", ")),
            Some(record),
        ))
    }

    /// The RETURNING row to its targets where there was one: Firebird
    /// leaves them alone where no row was changed (PL/pgSQL's INTO would
    /// set NULLs).
    fn returned(
        &mut self,
        record: Option<String>,
        returning: Option<&Returning>,
        depth: usize,
    ) -> Result<()> {
        let (Some(record), Some(r)) = (record, returning) else {
            return Ok(());
        };
        self.line(depth, "IF FOUND THEN");
        self.assign_from_record(&record, &r.into, depth + 1)?;
        self.line(depth, "END IF;");
        Ok(())
    }

    /// `"a" = v, "b" = w` of an UPDATE (or MERGE's).
    fn assignments(&self, sql: &Gen, sets: &[(Name, Expr)]) -> Result<String> {
        let mut parts = Vec::new();
        for (c, v) in sets {
            parts.push(format!(
                "{} = {}",
                (self.ctx.names)(NameKind::Column, &c.text),
                self.value(sql, v)?
            ));
        }
        Ok(parts.join(", "))
    }

    /// ` ("a", "b")`, or nothing for no columns.
    fn column_list(&self, columns: &[Name]) -> String {
        if columns.is_empty() {
            return String::new();
        }
        format!(
            " ({})",
            columns
                .iter()
                .map(|c| (self.ctx.names)(NameKind::Column, &c.text))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// `UPDATE OR INSERT ... MATCHING (m)`: an UPDATE of the rows whose
    /// `m` is not distinct from the value (Firebird's comparison: NULL
    /// matches NULL), then an INSERT where it found none. Not `INSERT
    /// ... ON CONFLICT`: that fires BEFORE INSERT triggers (a key
    /// generator draws a value) also for a row it then updates, which
    /// Firebird does not, and matches only by a unique index with `=`.
    fn update_or_insert(&mut self, s: &Stmt, depth: usize) -> Result<()> {
        let StmtKind::UpdateOrInsert {
            table,
            columns,
            values,
            matching,
            returning,
        } = &s.kind
        else {
            unreachable!("only UPDATE OR INSERT comes here")
        };
        let (returning, line) = (returning.as_ref(), s.line);
        let shape = (self.ctx.tables)(&table.text);
        let columns: Vec<Name> = if columns.is_empty() {
            match &shape {
                Some(t) => t
                    .columns
                    .iter()
                    .map(|c| Name {
                        text: c.clone(),
                        quoted: true,
                    })
                    .collect(),
                None => {
                    return Err(refuse(
                        "UPDATE OR INSERT without columns",
                        line,
                        "the table's columns are not known here: name them",
                    ))
                }
            }
        } else {
            columns.to_vec()
        };
        let matching: Vec<String> = if matching.is_empty() {
            match shape.as_ref().map(|t| &t.primary_key) {
                Some(k) if !k.is_empty() => k.clone(),
                _ => {
                    return Err(refuse(
                        "UPDATE OR INSERT without MATCHING",
                        line,
                        "the table has no primary key known here: say MATCHING (columns)",
                    ))
                }
            }
        } else {
            matching.iter().map(|m| m.text.clone()).collect()
        };
        if columns.len() != values.len() {
            return Err(refuse(
                "UPDATE OR INSERT",
                line,
                "the number of values is not the number of columns",
            ));
        }
        // Values are read by the UPDATE and again by the INSERT: one
        // that draws a new value each time would differ between them.
        let gen = self.gen();
        let texts = values
            .iter()
            .map(|v| self.value(&gen, v))
            .collect::<Result<Vec<_>>>()?;
        if let Some(t) = texts.iter().find(|t| draws(t)) {
            return Err(refuse(
                "UPDATE OR INSERT",
                line,
                &format!("a value that changes each time it is read ({t}) would be read twice"),
            ));
        }
        let mut conditions = Vec::new();
        for m in &matching {
            let Some(i) = columns.iter().position(|c| &c.text == m) else {
                return Err(refuse(
                    &format!("MATCHING {m}"),
                    line,
                    "a matching column not among the inserted ones",
                ));
            };
            conditions.push(format!(
                "{} IS NOT DISTINCT FROM {}",
                (self.ctx.names)(NameKind::Column, m),
                texts[i]
            ));
        }
        let target = (self.ctx.names)(NameKind::Table, &table.text);
        let sets = columns
            .iter()
            .zip(&texts)
            .map(|(c, v)| format!("{} = {v}", (self.ctx.names)(NameKind::Column, &c.text)))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = self.sql_gen();
        let (clause, record) = self.returning_clause(&sql, returning, line)?;
        self.line(
            depth,
            &format!(
                "UPDATE {target} SET {sets} WHERE {}{clause};",
                conditions.join(" AND ")
            ),
        );
        self.row_count(depth);
        self.line(depth, "IF NOT FOUND THEN");
        self.line(
            depth + 1,
            &format!(
                "INSERT INTO {target}{} VALUES ({}){clause};",
                self.column_list(&columns),
                texts.join(", ")
            ),
        );
        self.row_count(depth + 1);
        self.line(depth, "END IF;");
        self.returned(record, returning, depth)
    }

    /// The text of an EXECUTE STATEMENT, where it is a constant: read
    /// as the statement it is (SQL built when it runs is Firebird's,
    /// which PostgreSQL would not read).
    fn executed_text(&self, execute: &Execute, line: u32) -> Result<Parser> {
        let ExprKind::Str(text) = &execute.sql.kind else {
            return Err(refuse(
                "EXECUTE STATEMENT",
                line,
                "its SQL is built when it runs: translate the statements it can run",
            ));
        };
        Parser::new(&format!("{text};"))
            .map(Parser::with_markers)
            .map_err(|u| at(u, line))
    }

    fn executed_statement(&self, execute: &Execute, line: u32) -> Result<Stmt> {
        let mut p = self.executed_text(execute, line)?;
        let inner = p.statement().map_err(|u| at(u, line))?;
        p.expect_end().map_err(|u| at(u, line))?;
        if !matches!(
            inner.kind,
            StmtKind::Insert { .. }
                | StmtKind::Update { .. }
                | StmtKind::Delete { .. }
                | StmtKind::UpdateOrInsert { .. }
                | StmtKind::Merge(_)
        ) {
            return Err(refuse(
                "EXECUTE STATEMENT",
                line,
                "only INSERT, UPDATE, DELETE, UPDATE OR INSERT, MERGE or SELECT ... INTO in it \
                 are translated",
            ));
        }
        Ok(Stmt { line, ..inner })
    }

    fn executed_query(&self, execute: &Execute, line: u32) -> Result<Query> {
        let mut p = self.executed_text(execute, line)?;
        let q = p.query().map_err(|u| at(u, line))?;
        p.expect_end().map_err(|u| at(u, line))?;
        Ok(q)
    }

    /// Runs `f` where the names of an EXECUTE STATEMENT's text are its
    /// parameters (`:name`, `?` by position) and nothing else: the text
    /// does not see the routine's variables. A parameter's value is read
    /// where the text names it, so one that changes each time it is read
    /// is refused.
    fn with_parameters<T>(
        &mut self,
        execute: &Execute,
        line: u32,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let gen = self.gen();
        let mut variables = std::collections::HashMap::new();
        for (i, (name, value)) in execute.params.iter().enumerate() {
            let text = self.value(&gen, value)?;
            if draws(&text) {
                return Err(refuse(
                    "EXECUTE STATEMENT",
                    line,
                    &format!("a parameter that changes each time it is read ({text})"),
                ));
            }
            let key = match name {
                Some(n) => n.text.clone(),
                None => format!("?{}", i + 1),
            };
            variables.insert(key, format!("({text})"));
        }
        let outer = std::mem::replace(&mut self.scope.variables, variables);
        let result = f(self);
        self.scope.variables = outer;
        result
    }

    fn label(&self, l: &Name, line: u32) -> Result<String> {
        let name = pg_name(&l.text);
        if name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        {
            Ok(name)
        } else {
            Err(refuse(&l.text, line, "a label PL/pgSQL would not read"))
        }
    }

    fn row_count(&mut self, depth: usize) {
        if self.scope.row_count {
            self.line(depth, "GET DIAGNOSTICS fb_row_count = ROW_COUNT;");
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) -> Result<()> {
        let line = s.line;
        let gen = self.gen();
        match &s.kind {
            StmtKind::Assign(target, value) => {
                let t = self.target(target)?;
                let v = self.value(&gen, value)?;
                let v = self.typed(&t, v);
                self.line(depth, &format!("{t} := {v};"));
            }
            StmtKind::If(cond, then, otherwise) => {
                let c = gen.expr(cond)?;
                self.line(depth, &format!("IF {c} THEN"));
                self.stmt(then, depth + 1)?;
                if let Some(o) = otherwise {
                    self.line(depth, "ELSE");
                    self.stmt(o, depth + 1)?;
                }
                self.line(depth, "END IF;");
            }
            StmtKind::While(label, cond, body) => {
                let c = gen.expr(cond)?;
                let l = match label {
                    Some(l) => format!("<<{}>> ", self.label(l, line)?),
                    None => String::new(),
                };
                self.line(depth, &format!("{l}WHILE {c} LOOP"));
                self.stmt(body, depth + 1)?;
                self.line(depth, "END LOOP;");
            }
            StmtKind::ForSelect(label, query, into, cursor, body) => {
                let outer = cursor
                    .as_ref()
                    .and_then(|c| self.cursors.get(&c.text).cloned());
                let q = match cursor {
                    Some(c) => {
                        if !into.is_empty() {
                            self.numbered(query, into.len(), line)?;
                        }
                        self.declare_cursor(c, query, !into.is_empty(), line)?
                    }
                    None => self.numbered(query, into.len(), line)?,
                };
                let record = self.record();
                let l = match label {
                    Some(l) => format!("<<{}>> ", self.label(l, line)?),
                    None => String::new(),
                };
                self.line(depth, &format!("{l}FOR {record} IN {q} LOOP"));
                self.assign_from_record(&record, into, depth + 1)?;
                let reads = cursor.as_ref().map(|c| c.text.clone());
                if let Some(c) = &reads {
                    self.scope.cursor_rows.insert(c.clone(), record.clone());
                }
                self.stmt(body, depth + 1)?;
                if let Some(c) = &reads {
                    self.scope.cursor_rows.remove(c);
                    // The loop's cursor is its own: a cursor of the same
                    // name outside it is that one again.
                    match outer {
                        Some(o) => self.cursors.insert(c.clone(), o),
                        None => self.cursors.remove(c),
                    };
                }
                self.line(depth, "END LOOP;");
            }
            StmtKind::SelectInto(query, into) => {
                let q = self.numbered(query, into.len(), line)?;
                self.select_into(&q, into, depth)?;
            }
            StmtKind::ForExecute(label, execute, body) => {
                let query = self.executed_query(execute, line)?;
                let q = self.with_parameters(execute, line, |r| {
                    r.numbered(&query, execute.into.len(), line)
                })?;
                let record = self.record();
                let l = match label {
                    Some(l) => format!("<<{}>> ", self.label(l, line)?),
                    None => String::new(),
                };
                self.line(depth, &format!("{l}FOR {record} IN {q} LOOP"));
                self.assign_from_record(&record, &execute.into, depth + 1)?;
                self.stmt(body, depth + 1)?;
                self.line(depth, "END LOOP;");
            }
            StmtKind::Open(c) | StmtKind::Close(c) => {
                let (variable, _) = self.cursor(c, line)?;
                let verb = if matches!(s.kind, StmtKind::Open(_)) {
                    "OPEN"
                } else {
                    "CLOSE"
                };
                self.line(depth, &format!("{verb} {variable};"));
            }
            StmtKind::Fetch(c, into) => {
                // Firebird leaves the targets alone past the last row
                // (PL/pgSQL's FETCH INTO would set them NULL).
                let (variable, count) = self.cursor(c, line)?;
                if count != into.len() {
                    return Err(refuse(
                        "INTO",
                        line,
                        "the number of targets is not the number of columns",
                    ));
                }
                let record = self.record();
                self.line(depth, &format!("FETCH {variable} INTO {record};"));
                self.row_count(depth);
                self.line(depth, "IF FOUND THEN");
                self.assign_from_record(&record, into, depth + 1)?;
                self.line(depth, "END IF;");
            }
            StmtKind::UpdateOrInsert { .. } => self.update_or_insert(s, depth)?,
            StmtKind::Merge(m) => {
                let sql = self.sql_gen();
                let mut text = format!(
                    "MERGE INTO {}",
                    (self.ctx.names)(NameKind::Table, &m.target.text)
                );
                if let Some(a) = &m.alias {
                    text += &format!(" AS {}", quote(&pg_name(&a.text)));
                }
                text += &format!(
                    " USING {} ON {}",
                    sql.table_ref(&m.source)?,
                    sql.expr(&m.on)?
                );
                for w in &m.whens {
                    text += if w.matched {
                        " WHEN MATCHED"
                    } else {
                        " WHEN NOT MATCHED"
                    };
                    if let Some(c) = &w.condition {
                        text += &format!(" AND {}", sql.expr(c)?);
                    }
                    text += " THEN ";
                    text += &match &w.action {
                        MergeAction::Update(sets) => {
                            format!("UPDATE SET {}", self.assignments(&sql, sets)?)
                        }
                        MergeAction::Delete => "DELETE".into(),
                        MergeAction::Insert(columns, values) => {
                            let v = values
                                .iter()
                                .map(|v| self.value(&sql, v))
                                .collect::<Result<Vec<_>>>()?;
                            format!(
                                "INSERT{} VALUES ({})",
                                self.column_list(columns),
                                v.join(", ")
                            )
                        }
                    };
                }
                self.line(depth, &(text + ";"));
                self.row_count(depth);
            }
            StmtKind::Autonomous(_) => {
                return Err(refuse(
                    "IN AUTONOMOUS TRANSACTION",
                    line,
                    crate::parser::AUTONOMOUS,
                ));
            }
            _ => return self.data_stmt(s, depth),
        }
        Ok(())
    }

    /// A singleton SELECT's query (numbered) into its targets.
    fn select_into(&mut self, q: &str, into: &[Expr], depth: usize) -> Result<()> {
        let record = self.record();
        self.counts_rows = true;
        self.line(depth, "fb_rows := 0;");
        self.line(depth, &format!("FOR {record} IN {q} LOOP"));
        self.line(depth + 1, "fb_rows := fb_rows + 1;");
        self.line(
            depth + 1,
            "IF fb_rows > 1 THEN RAISE EXCEPTION 'multiple rows in singleton select' \
                     USING ERRCODE = '21000'; END IF;",
        );
        self.assign_from_record(&record, into, depth + 1)?;
        self.line(depth, "END LOOP;");
        if self.scope.row_count {
            self.line(depth, "fb_row_count := fb_rows;");
        }
        Ok(())
    }

    /// The statements of [`Routine::stmt`] that open no loop or cursor.
    fn data_stmt(&mut self, s: &Stmt, depth: usize) -> Result<()> {
        let line = s.line;
        let gen = self.gen();
        match &s.kind {
            StmtKind::Insert {
                table,
                columns,
                source,
                returning,
            } => {
                let sql = self.sql_gen();
                let mut text = format!(
                    "INSERT INTO {}",
                    (self.ctx.names)(NameKind::Table, &table.text)
                );
                text += &self.column_list(columns);
                match source {
                    InsertSource::Values(values) => {
                        let v = values
                            .iter()
                            .map(|v| self.value(&sql, v))
                            .collect::<Result<Vec<_>>>()?;
                        text += &format!(" VALUES ({})", v.join(", "));
                    }
                    InsertSource::Query(q) => text += &format!(" {}", sql.query(q)?),
                    InsertSource::Default => text += " DEFAULT VALUES",
                }
                self.dml(&sql, text, returning.as_ref(), line, depth)?;
            }
            StmtKind::Update {
                table,
                alias,
                sets,
                filter,
                returning,
            } => {
                let sql = self.sql_gen();
                let mut text = format!("UPDATE {}", (self.ctx.names)(NameKind::Table, &table.text));
                if let Some(a) = alias {
                    text += &format!(" AS {}", quote(&pg_name(&a.text)));
                }
                text += &format!(" SET {}", self.assignments(&sql, sets)?);
                text += &self.filter(&sql, filter, line)?;
                self.dml(&sql, text, returning.as_ref(), line, depth)?;
            }
            StmtKind::Delete {
                table,
                alias,
                filter,
                returning,
            } => {
                let sql = self.sql_gen();
                let mut text = format!(
                    "DELETE FROM {}",
                    (self.ctx.names)(NameKind::Table, &table.text)
                );
                if let Some(a) = alias {
                    text += &format!(" AS {}", quote(&pg_name(&a.text)));
                }
                text += &self.filter(&sql, filter, line)?;
                self.dml(&sql, text, returning.as_ref(), line, depth)?;
            }
            StmtKind::Suspend => match self.kind {
                RoutineKind::Selectable => self.line(depth, "RETURN NEXT;"),
                RoutineKind::Executable => self.line(depth, "RETURN;"),
                _ => {
                    return Err(refuse(
                        "SUSPEND",
                        line,
                        "SUSPEND outside a selectable procedure",
                    ))
                }
            },
            StmtKind::Exit => {
                let ending = self.ending();
                match &self.kind {
                    RoutineKind::Trigger { .. } => {
                        for e in ending {
                            self.line(depth, &e);
                        }
                    }
                    RoutineKind::Function => self.line(depth, "RETURN NULL;"),
                    _ => self.line(depth, "RETURN;"),
                }
            }
            StmtKind::Leave(label) => match label {
                Some(l) => {
                    let l = self.label(l, line)?;
                    self.line(depth, &format!("EXIT {l};"))
                }
                None => self.line(depth, "EXIT;"),
            },
            StmtKind::Continue(label) => match label {
                Some(l) => {
                    let l = self.label(l, line)?;
                    self.line(depth, &format!("CONTINUE {l};"))
                }
                None => self.line(depth, "CONTINUE;"),
            },
            StmtKind::Raise(None, ..) => self.line(depth, "RAISE;"),
            StmtKind::Raise(Some(name), message, args) => {
                let Some(e) = (self.ctx.exceptions)(&name.text) else {
                    return Err(refuse(
                        &format!("EXCEPTION {}", name.text),
                        line,
                        "an exception not in the catalog",
                    ));
                };
                let message = match message {
                    Some(m) => gen.expr(m)?,
                    None if !args.is_empty() => {
                        let args = args
                            .iter()
                            .map(|a| gen.expr(a))
                            .collect::<Result<Vec<_>>>()?;
                        message_with_arguments(&e.message, &args)
                    }
                    None => format!("'{}'", e.message.replace('\'', "''")),
                };
                self.line(
                    depth,
                    &format!(
                        "RAISE EXCEPTION USING ERRCODE = '{}', MESSAGE = {message}, DETAIL = '{}';",
                        e.sqlstate,
                        format!("Firebird exception {}", name.text).replace('\'', "''")
                    ),
                );
            }
            StmtKind::ExecuteProcedure(name, args, returning) => {
                let call = gen.call(&name.text, args)?;
                if returning.is_empty() {
                    self.line(depth, &format!("PERFORM * FROM {call};"));
                } else {
                    let t = returning
                        .iter()
                        .map(|x| self.target(x))
                        .collect::<Result<Vec<_>>>()?;
                    self.line(
                        depth,
                        &format!("SELECT * INTO {} FROM {call} LIMIT 1;", t.join(", ")),
                    );
                }
            }
            StmtKind::ExecuteStatement(execute) => {
                if execute.into.is_empty() {
                    let inner = self.executed_statement(execute, line)?;
                    self.with_parameters(execute, line, |r| r.stmt(&inner, depth))?;
                } else {
                    let query = self.executed_query(execute, line)?;
                    let q = self.with_parameters(execute, line, |r| {
                        r.numbered(&query, execute.into.len(), line)
                    })?;
                    self.select_into(&q, &execute.into, depth)?;
                }
            }
            StmtKind::PostEvent(e) => {
                let v = gen.expr(e)?;
                self.line(depth, &format!("PERFORM pg_notify({v}, '');"));
            }
            StmtKind::Return(e) => match self.kind {
                RoutineKind::Function => {
                    let v = self.value(&gen, e)?;
                    // PostgreSQL keeps no length or scale on a result.
                    let v = match &self.returns {
                        Some(t) => format!("CAST({v} AS {t})"),
                        None => v,
                    };
                    self.line(depth, &format!("RETURN {v};"));
                }
                _ => return Err(refuse("RETURN", line, "RETURN outside a function")),
            },
            StmtKind::Block(b) => self.block(b, depth)?,
            _ => unreachable!("Routine::stmt writes the others"),
        }
        Ok(())
    }
}

/// An exception's message with `USING (args)` filled in, as Firebird's
/// message format does it (measured on Firebird 5): `@1` ... `@9` is
/// that argument as text, `*** null ***` where it is NULL, and stays
/// `@n` where there is no such argument; `@@` is `@`; `@10` is the
/// first argument and a `0`. The message is known here, so the text is
/// put together from its pieces, not by replacing in it when it runs
/// (an argument holding `@2` stays as it is).
fn message_with_arguments(message: &str, args: &[String]) -> String {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '@' {
            match chars.peek().copied() {
                Some('@') => {
                    chars.next();
                    literal.push('@');
                    continue;
                }
                Some(d @ '1'..='9') if (d as usize - '0' as usize) <= args.len() => {
                    chars.next();
                    if !literal.is_empty() {
                        parts.push(format!(
                            "'{}'",
                            std::mem::take(&mut literal).replace('\'', "''")
                        ));
                    }
                    let arg = &args[d as usize - '1' as usize];
                    parts.push(format!("coalesce(CAST({arg} AS text), '*** null ***')"));
                    continue;
                }
                _ => {}
            }
        }
        literal.push(c);
    }
    if !literal.is_empty() || parts.is_empty() {
        parts.push(format!("'{}'", literal.replace('\'', "''")));
    }
    parts.join(" || ")
}

/// An untranslated construct of an EXECUTE STATEMENT's text, at the
/// line of the statement.
fn at(mut u: Untranslated, line: u32) -> Untranslated {
    u.line = line;
    u
}

/// Whether generated text draws a new value each time it is read (a
/// sequence, a random number, a new UUID, a context variable set).
fn draws(text: &str) -> bool {
    ["nextval(", "random()", "gen_random_uuid()", "set_config("]
        .iter()
        .any(|f| text.contains(f))
}

/// The cursors that an UPDATE or DELETE names in `WHERE CURRENT OF`.
fn positioned_cursors(body: &Block) -> std::collections::HashSet<String> {
    fn stmt(s: &Stmt, out: &mut std::collections::HashSet<String>) {
        match &s.kind {
            StmtKind::Update {
                filter: Filter::CurrentOf(c),
                ..
            }
            | StmtKind::Delete {
                filter: Filter::CurrentOf(c),
                ..
            } => {
                out.insert(c.text.clone());
            }
            StmtKind::If(_, a, b) => {
                stmt(a, out);
                if let Some(b) = b {
                    stmt(b, out);
                }
            }
            StmtKind::While(_, _, b)
            | StmtKind::ForSelect(_, _, _, _, b)
            | StmtKind::ForExecute(_, _, b)
            | StmtKind::Autonomous(b) => stmt(b, out),
            StmtKind::Block(b) => block(b, out),
            _ => {}
        }
    }
    fn block(b: &Block, out: &mut std::collections::HashSet<String>) {
        for s in b
            .statements
            .iter()
            .chain(b.handlers.iter().map(|h| h.body.as_ref()))
        {
            stmt(s, out);
        }
    }
    let mut out = Default::default();
    block(body, &mut out);
    out
}

/// The procedures a trigger's, procedure's or function's DDL calls
/// (`EXECUTE PROCEDURE p`, `FROM p(...)`), by their Firebird names:
/// PostgreSQL makes a PL/pgSQL function without looking at what its body
/// calls, so one that calls a procedure not made must not be made
/// either.
pub fn routine_calls(ddl: &str) -> Result<Vec<String>> {
    routine_reads(ddl, true)
}

/// The tables and views a routine's DDL reads or writes (Firebird
/// names; `FROM`, `INSERT INTO`, `UPDATE`, `DELETE FROM`, not those in
/// an expression's subquery).
pub fn routine_tables(ddl: &str) -> Result<Vec<String>> {
    routine_reads(ddl, false)
}

fn routine_reads(ddl: &str, procedures: bool) -> Result<Vec<String>> {
    let mut p = Parser::new(ddl)?;
    // Past the header: the body starts at AS (or DECLARE/BEGIN).
    while !(p.is_word_pub("AS") || p.is_word_pub("DECLARE") || p.is_word_pub("BEGIN")) {
        if p.at_end() {
            return Ok(Vec::new());
        }
        p.advance_pub();
    }
    let body = p.body()?;
    let mut out = Vec::new();
    for c in &body.cursors {
        out.extend(if procedures {
            crate::query_procedures(&c.query)
        } else {
            crate::query_tables(&c.query)
        });
    }
    block_reads(&body.block, procedures, &mut out);
    out.sort();
    out.dedup();
    Ok(out)
}

fn block_reads(b: &Block, procedures: bool, out: &mut Vec<String>) {
    for s in b
        .statements
        .iter()
        .chain(b.handlers.iter().map(|h| h.body.as_ref()))
    {
        stmt_reads(s, procedures, out);
    }
}

fn stmt_reads(s: &Stmt, procedures: bool, out: &mut Vec<String>) {
    let query = |q: &Query| {
        if procedures {
            crate::query_procedures(q)
        } else {
            crate::query_tables(q)
        }
    };
    match &s.kind {
        StmtKind::ExecuteProcedure(name, _, _) if procedures => out.push(name.text.clone()),
        StmtKind::If(_, a, b) => {
            stmt_reads(a, procedures, out);
            if let Some(b) = b {
                stmt_reads(b, procedures, out);
            }
        }
        StmtKind::While(_, _, b) | StmtKind::ForExecute(_, _, b) | StmtKind::Autonomous(b) => {
            stmt_reads(b, procedures, out)
        }
        StmtKind::ForSelect(_, q, _, _, b) => {
            out.extend(query(q));
            stmt_reads(b, procedures, out);
        }
        StmtKind::SelectInto(q, _) => out.extend(query(q)),
        StmtKind::Insert { table, source, .. } => {
            if !procedures {
                out.push(table.text.clone());
            }
            if let InsertSource::Query(q) = source {
                out.extend(query(q));
            }
        }
        StmtKind::Update { table, .. }
        | StmtKind::Delete { table, .. }
        | StmtKind::UpdateOrInsert { table, .. }
            if !procedures =>
        {
            out.push(table.text.clone())
        }
        StmtKind::Merge(m) => {
            if !procedures {
                out.push(m.target.text.clone());
            }
            if let TableRef::Derived { query: q, .. } = &m.source {
                out.extend(query(q));
            } else if !procedures {
                if let TableRef::Table { name, .. } = &m.source {
                    out.push(name.text.clone());
                }
            }
        }
        StmtKind::Block(b) => block_reads(b, procedures, out),
        _ => {}
    }
}
