//! The typed tree Firebird SQL and PSQL are parsed into: one tree for
//! every target, so a construct is read once and each generator says
//! for itself what it cannot express.

/// A name as written: unquoted ones upper-cased, quoted ones as is.
#[derive(Debug, Clone, PartialEq)]
pub struct Name {
    pub text: String,
    pub quoted: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Number(String),
    Str(String),
    Hex(String),
    Null,
    Bool(bool),
    /// `VALUE` in a domain's CHECK.
    Value,
    /// A column or variable, qualified or not: `X`, `T.X`, `NEW.X`.
    Column(Vec<Name>),
    /// `:X` in PSQL: a variable or parameter.
    Param(Name),
    /// `T.*` or `*` in a select list or `COUNT(*)`.
    Star(Option<Name>),
    /// `CURRENT_DATE`, `CURRENT_USER`, `ROW_COUNT`, `INSERTING`, ...
    Context(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// `a IS [NOT] DISTINCT FROM b`; the flag is NOT.
    Distinct(Box<Expr>, Box<Expr>, bool),
    /// `a IS [NOT] TRUE/FALSE/UNKNOWN`.
    IsBool(Box<Expr>, Option<bool>, bool),
    In(Box<Expr>, InList, bool),
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    /// `LIKE`, `STARTING WITH`, `CONTAINING`, `SIMILAR TO`.
    Match {
        kind: MatchKind,
        value: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
    },
    Exists(Box<Query>),
    Subquery(Box<Query>),
    /// `a = ANY/SOME/ALL (SELECT ...)`.
    Quantified(BinaryOp, Box<Expr>, bool, Box<Query>),
    Function {
        name: String,
        args: Vec<Expr>,
        distinct: bool,
        over: Option<Window>,
    },
    Cast(Box<Expr>, DataType),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Extract(String, Box<Expr>),
    Substring(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    /// `TRIM([BOTH|LEADING|TRAILING] [what] FROM x)`.
    Trim(Option<String>, Option<Box<Expr>>, Box<Expr>),
    /// `POSITION(a IN b)`.
    Position(Box<Expr>, Box<Expr>),
    DateAdd(String, Box<Expr>, Box<Expr>),
    DateDiff(String, Box<Expr>, Box<Expr>),
    /// `NEXT VALUE FOR G` and `GEN_ID(G, step)`.
    NextValue(Name, Option<Box<Expr>>),
    /// `FIRST_DAY(OF unit FROM x)` (false) / `LAST_DAY(...)` (true).
    DayOf(bool, String, Box<Expr>),
    /// An array column's element: `A[i]`, `M[i, j]`.
    Element(Box<Expr>, Vec<Expr>),
    /// A string with a character set introducer: `_UTF8 'x'`.
    Introduced(String, String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum InList {
    Values(Vec<Expr>),
    Query(Box<Query>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Like,
    StartingWith,
    Containing,
    SimilarTo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub partition: Vec<Expr>,
    pub order: Vec<OrderItem>,
    /// A frame clause, kept only to refuse it.
    pub frame: bool,
}

/// A type as written in CAST, a variable or a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum DataType {
    /// A built-in type: its name words (`DOUBLE PRECISION`), its
    /// arguments, and the rest (`CHARACTER SET X`, `SUB_TYPE TEXT`).
    Builtin {
        name: String,
        args: Vec<String>,
        charset: Option<String>,
        sub_type: Option<String>,
        time_zone: Option<bool>,
    },
    /// A domain's name.
    Domain(Name),
    /// `TYPE OF COLUMN T.C` / `TYPE OF D`.
    TypeOf(Vec<Name>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub expr: Expr,
    pub descending: bool,
    pub nulls: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub with: Vec<Cte>,
    pub recursive: bool,
    pub body: SetExpr,
    pub order: Vec<OrderItem>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// `WITH LOCK [SKIP LOCKED]`: the rows locked as they are read; the
    /// flag is SKIP LOCKED.
    pub lock: Option<bool>,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cte {
    pub name: Name,
    pub columns: Vec<Name>,
    pub query: Query,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetExpr {
    Select(Box<Select>),
    /// `UNION [ALL]`; the flag is ALL.
    Union(Box<SetExpr>, Box<SetExpr>, bool),
    Nested(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<SelectItem>,
    pub from: Vec<TableRef>,
    pub filter: Option<Expr>,
    pub group: Vec<Expr>,
    pub having: Option<Expr>,
    /// PSQL's `INTO :a, :b` (kept apart: the statement uses it).
    pub into: Vec<Expr>,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    pub expr: Expr,
    pub alias: Option<Name>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TableRef {
    Table {
        name: Name,
        alias: Option<Name>,
        line: u32,
    },
    /// A selectable procedure: `P(args) [alias]`.
    Procedure {
        name: Name,
        args: Vec<Expr>,
        alias: Option<Name>,
    },
    Derived {
        query: Box<Query>,
        alias: Option<Name>,
        columns: Vec<Name>,
    },
    Join {
        left: Box<TableRef>,
        kind: JoinKind,
        right: Box<TableRef>,
        on: Option<Expr>,
        using: Vec<Name>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    Cross,
    Natural,
}

/// A PSQL statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `x = e`, `NEW.x = e`, `:x = e`.
    Assign(Expr, Expr),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Option<Name>, Expr, Box<Stmt>),
    /// `FOR SELECT ... INTO ... [AS CURSOR c] DO stmt`.
    ForSelect(Option<Name>, Query, Vec<Expr>, Option<Name>, Box<Stmt>),
    /// `FOR EXECUTE STATEMENT ... INTO ... DO stmt`.
    ForExecute(Option<Name>, Execute, Box<Stmt>),
    /// A singleton `SELECT ... INTO`.
    SelectInto(Query, Vec<Expr>),
    Insert {
        table: Name,
        columns: Vec<Name>,
        source: InsertSource,
        returning: Option<Returning>,
    },
    Update {
        table: Name,
        alias: Option<Name>,
        sets: Vec<(Name, Expr)>,
        filter: Filter,
        returning: Option<Returning>,
    },
    Delete {
        table: Name,
        alias: Option<Name>,
        filter: Filter,
        returning: Option<Returning>,
    },
    /// `UPDATE OR INSERT INTO t [(cols)] VALUES (...) [MATCHING (cols)]`.
    UpdateOrInsert {
        table: Name,
        columns: Vec<Name>,
        values: Vec<Expr>,
        matching: Vec<Name>,
        returning: Option<Returning>,
    },
    Merge(Box<Merge>),
    /// `OPEN c`, `CLOSE c`.
    Open(Name),
    Close(Name),
    /// `FETCH c INTO ...`.
    Fetch(Name, Vec<Expr>),
    /// `IN AUTONOMOUS TRANSACTION DO stmt`, kept only to refuse it.
    Autonomous(Box<Stmt>),
    Suspend,
    Exit,
    /// `LEAVE [label]` / `BREAK`.
    Leave(Option<Name>),
    /// `CONTINUE [label]`.
    Continue(Option<Name>),
    /// `EXCEPTION [name [message | USING (args)]]`; no name re-raises.
    Raise(Option<Name>, Option<Expr>, Vec<Expr>),
    ExecuteProcedure(Name, Vec<Expr>, Vec<Expr>),
    /// `EXECUTE STATEMENT e [(params)] [INTO ...]`.
    ExecuteStatement(Execute),
    PostEvent(Expr),
    /// A PSQL function's `RETURN e`.
    Return(Expr),
    Block(Block),
}

/// `RETURNING e, ... INTO :a, ...` of a PSQL statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Returning {
    pub values: Vec<Expr>,
    pub into: Vec<Expr>,
}

/// An UPDATE's or DELETE's rows: a condition, or the row a cursor is on.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    All,
    Where(Expr),
    CurrentOf(Name),
}

/// `EXECUTE STATEMENT sql [(p := e, ...) | (e, ...)] [INTO targets]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Execute {
    pub sql: Expr,
    /// Named (`:p` in the text) or positional (`?`) parameters.
    pub params: Vec<(Option<Name>, Expr)>,
    pub into: Vec<Expr>,
}

/// `MERGE INTO target USING source ON cond WHEN ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub target: Name,
    pub alias: Option<Name>,
    pub source: TableRef,
    pub on: Expr,
    pub whens: Vec<MergeWhen>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MergeWhen {
    pub matched: bool,
    pub condition: Option<Expr>,
    pub action: MergeAction,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MergeAction {
    Update(Vec<(Name, Expr)>),
    Delete,
    Insert(Vec<Name>, Vec<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertSource {
    Values(Vec<Expr>),
    Query(Box<Query>),
    Default,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub statements: Vec<Stmt>,
    pub handlers: Vec<Handler>,
}

/// `WHEN ... DO stmt`.
#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    pub conditions: Vec<Condition>,
    pub body: Box<Stmt>,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Any,
    Exception(Name),
    SqlCode(i64),
    GdsCode(String),
    SqlState(String),
}

/// A variable declared in a routine's header.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: Name,
    pub data_type: DataType,
    pub default: Option<Expr>,
    pub not_null: bool,
    pub line: u32,
}

/// A trigger's or routine's body: what follows `AS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub variables: Vec<Variable>,
    /// `DECLARE c CURSOR FOR (SELECT ...)`.
    pub cursors: Vec<Cursor>,
    pub block: Block,
}

/// A cursor declared in a routine's header.
#[derive(Debug, Clone, PartialEq)]
pub struct Cursor {
    pub name: Name,
    pub query: Query,
    pub line: u32,
}
