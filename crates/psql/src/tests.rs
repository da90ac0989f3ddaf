//! Source → target, one line per construct. These pin the text; the
//! behaviour (the same statements on both engines) is tested in
//! crates/cli/tests/postgres_translate.rs.

use super::*;

fn expr(source: &str) -> String {
    translate_expression(source, &ExprContext::new()).unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn domain(source: &str) -> String {
    translate_expression(source, &ExprContext::new().for_domain())
        .unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn refused(source: &str) -> Untranslated {
    translate_expression(source, &ExprContext::new()).unwrap_err()
}

fn view(source: &str) -> String {
    translate_view(source, &ExprContext::new()).unwrap_or_else(|e| panic!("{source}: {e}"))
}

#[test]
fn domain_checks() {
    let cases = [
        ("CHECK (VALUE > 0)", "VALUE > 0"),
        (
            "CHECK (VALUE > 10000 AND VALUE <= 2000000)",
            "VALUE > 10000 AND VALUE <= 2000000",
        ),
        ("CHECK (VALUE BETWEEN 0 AND 6)", "VALUE BETWEEN 0 AND 6"),
        (
            "CHECK (VALUE NOT BETWEEN 0 AND 6)",
            "VALUE NOT BETWEEN 0 AND 6",
        ),
        (
            "CHECK (VALUE IN ('software', 'hardware', 'other', 'N/A'))",
            "VALUE IN ('software', 'hardware', 'other', 'N/A')",
        ),
        ("CHECK (VALUE = UPPER (VALUE))", "VALUE = upper(VALUE)"),
        (
            "CHECK (VALUE STARTING WITH 'V')",
            "starts_with(CAST(VALUE AS text), CAST('V' AS text))",
        ),
        (
            "CHECK (VALUE = '000' OR (VALUE > '0' AND VALUE <= '999') OR VALUE IS NULL)",
            "VALUE = '000' OR (VALUE > '0' AND VALUE <= '999') OR VALUE IS NULL",
        ),
        ("CHECK (VALUE IS NOT NULL)", "VALUE IS NOT NULL"),
        (
            "CHECK (VALUE CONTAINING 'x')",
            "(POSITION(lower(CAST('x' AS text)) IN lower(CAST(VALUE AS text))) > 0)",
        ),
        ("CHECK (VALUE LIKE 'A%')", "VALUE LIKE 'A%' ESCAPE ''"),
        (
            "CHECK (VALUE LIKE 'A!%' ESCAPE '!')",
            "VALUE LIKE 'A!%' ESCAPE '!'",
        ),
        (
            "CHECK (VALUE NOT LIKE 'A%')",
            "VALUE NOT LIKE 'A%' ESCAPE ''",
        ),
        (
            "CHECK (VALUE SIMILAR TO '[0-9]+')",
            "VALUE SIMILAR TO '[0-9]+' ESCAPE ''",
        ),
    ];
    for (source, target) in cases {
        assert_eq!(domain(source), target, "{source}");
    }
}

#[test]
fn table_checks_and_expressions() {
    let cases = [
        (
            "CHECK (min_salary < max_salary)",
            r#""min_salary" < "max_salary""#,
        ),
        ("CHECK (FISCAL_YEAR >= 1993)", r#""fiscal_year" >= 1993"#),
        (
            "CHECK (percent_change between -50 and 50)",
            r#""percent_change" BETWEEN -50 AND 50"#,
        ),
        (
            "CHECK (on_hold IS NULL OR on_hold = '*')",
            r#""on_hold" IS NULL OR "on_hold" = '*'"#,
        ),
        (
            "CHECK (NOT (order_status = 'shipped' AND ship_date IS NULL))",
            r#"NOT ("order_status" = 'shipped' AND "ship_date" IS NULL)"#,
        ),
        ("CHECK (\"Mixed\" <> 'it''s')", r#""Mixed" <> 'it''s'"#),
        ("a || ', ' || b", r#""a" || ', ' || "b""#),
        ("(a + b) * c", r#"("a" + "b") * "c""#),
        ("a - (b - c)", r#""a" - ("b" - "c")"#),
        ("a - b - c", r#""a" - "b" - "c""#),
        ("a / 2", r#""a" / 2"#),
        ("-a", r#"-"a""#),
        ("a != 1", r#""a" <> 1"#),
        ("a ^= 1", r#""a" <> 1"#),
        ("a IS DISTINCT FROM b", r#""a" IS DISTINCT FROM "b""#),
        ("b IS TRUE", r#""b" IS TRUE"#),
        (
            "IIF(a > 0, 'p', 'n')",
            r#"CASE WHEN "a" > 0 THEN 'p' ELSE 'n' END"#,
        ),
        ("COALESCE(a, 0)", r#"coalesce("a", 0)"#),
        ("NULLIF(a, 0)", r#"nullif("a", 0)"#),
        (
            "CASE a WHEN 1 THEN 'one' ELSE 'other' END",
            r#"CASE "a" WHEN 1 THEN 'one' ELSE 'other' END"#,
        ),
        (
            "CASE WHEN a IS NULL THEN 0 END",
            r#"CASE WHEN "a" IS NULL THEN 0 END"#,
        ),
        (
            "DECODE(a, 1, 'x', 2, 'y', 'z')",
            r#"CASE "a" WHEN 1 THEN 'x' WHEN 2 THEN 'y' ELSE 'z' END"#,
        ),
        ("CAST(a AS VARCHAR(10))", r#"CAST("a" AS varchar(10))"#),
        ("CAST(a AS NUMERIC(10,2))", r#"CAST("a" AS numeric(10,2))"#),
        (
            "CAST(a AS DOUBLE PRECISION)",
            r#"CAST("a" AS double precision)"#,
        ),
        ("CAST(a AS BLOB SUB_TYPE TEXT)", r#"CAST("a" AS text)"#),
        (
            "CAST(a AS CHAR(3) CHARACTER SET OCTETS)",
            r#"CAST("a" AS bytea)"#,
        ),
        ("CAST('25.12.2024' AS DATE)", "CAST('2024-12-25' AS date)"),
        ("CAST('2024-12-25' AS DATE)", "CAST('2024-12-25' AS date)"),
        ("CAST('NOW' AS TIMESTAMP)", "LOCALTIMESTAMP"),
        ("CAST('TODAY' AS DATE)", "CURRENT_DATE"),
        ("DATE '2024-01-02'", "CAST('2024-01-02' AS date)"),
        (
            "CAST('NOW' AS TIMESTAMP) - 60",
            "LOCALTIMESTAMP - 60 * INTERVAL '1 day'",
        ),
        ("CURRENT_DATE - 1", "CURRENT_DATE - 1"),
        ("CURRENT_TIMESTAMP", "LOCALTIMESTAMP"),
        ("USER", "CURRENT_USER"),
        ("UPPER(a) = LOWER(b)", r#"upper("a") = lower("b")"#),
        (
            "SUBSTRING(a FROM 2 FOR 3)",
            r#"SUBSTRING("a" FROM 2 FOR 3)"#,
        ),
        ("SUBSTRING(a FROM 2)", r#"SUBSTRING("a" FROM 2)"#),
        ("TRIM(a)", r#"TRIM("a")"#),
        ("TRIM(LEADING '0' FROM a)", r#"TRIM(LEADING '0' FROM "a")"#),
        ("CHAR_LENGTH(a)", r#"char_length("a")"#),
        ("POSITION('x' IN a)", r#"POSITION('x' IN "a")"#),
        ("POSITION('x', a)", r#"POSITION('x' IN "a")"#),
        ("LPAD(a, 5, '0')", r#"lpad("a", 5, '0')"#),
        ("REPLACE(a, 'x', 'y')", r#"replace("a", 'x', 'y')"#),
        ("ROUND(a, 2)", r#"round(CAST("a" AS numeric), 2)"#),
        (
            "MAXVALUE(a, b)",
            r#"CASE WHEN ("a") IS NULL OR ("b") IS NULL THEN NULL ELSE GREATEST("a", "b") END"#,
        ),
        (
            "EXTRACT(YEAR FROM d)",
            r#"CAST(EXTRACT(YEAR FROM "d") AS integer)"#,
        ),
        (
            "EXTRACT(WEEKDAY FROM d)",
            r#"CAST(EXTRACT(DOW FROM "d") AS integer)"#,
        ),
        (
            "EXTRACT(YEARDAY FROM d)",
            r#"(CAST(EXTRACT(DOY FROM "d") AS integer) - 1)"#,
        ),
        ("DATEADD(DAY, 7, d)", r#""d" + 7 * INTERVAL '1 day'"#),
        ("DATEADD(7 DAY TO d)", r#""d" + 7 * INTERVAL '1 day'"#),
        (
            "DATEADD(MONTH, 1, CURRENT_DATE)",
            "CAST(CURRENT_DATE + 1 * INTERVAL '1 month' AS date)",
        ),
        (
            "DATEDIFF(DAY, a, b)",
            r#"CAST(CAST("b" AS date) - CAST("a" AS date) AS bigint)"#,
        ),
        (
            "DATEDIFF(HOUR, a, b)",
            r#"CAST((EXTRACT(EPOCH FROM date_trunc('hour', CAST("b" AS timestamp))) - EXTRACT(EPOCH FROM date_trunc('hour', CAST("a" AS timestamp)))) / 3600 AS bigint)"#,
        ),
        (
            "DATEDIFF(MINUTE FROM TIME '10:00:59' TO a)",
            r#"CAST((EXTRACT(EPOCH FROM date_trunc('minute', CAST("a" AS interval))) - EXTRACT(EPOCH FROM date_trunc('minute', CAST(CAST('10:00:59' AS time) AS interval)))) / 60 AS bigint)"#,
        ),
        (
            "DATEDIFF(MILLISECOND, a, b)",
            r#"CAST(EXTRACT(EPOCH FROM CAST("b" AS timestamp) - CAST("a" AS timestamp)) * 1000 AS numeric(18,1))"#,
        ),
        (
            "EXTRACT(QUARTER FROM d)",
            r#"CAST(EXTRACT(QUARTER FROM "d") AS integer)"#,
        ),
        (
            "DATEDIFF(YEAR FROM a TO b)",
            r#"CAST((EXTRACT(YEAR FROM "b") - EXTRACT(YEAR FROM "a")) AS bigint)"#,
        ),
        ("GEN_ID(emp_no_gen, 1)", r#"nextval('"emp_no_gen"')"#),
        ("NEXT VALUE FOR g", r#"nextval('"g"')"#),
        ("_UTF8 'x'", "'x'"),
        ("a IN (SELECT b FROM t)", r#""a" IN (SELECT "b" FROM "t")"#),
        (
            "EXISTS (SELECT 1 FROM t WHERE t.x = y)",
            r#"EXISTS (SELECT 1 FROM "t" WHERE "t"."x" = "y")"#,
        ),
        (
            "a > ALL (SELECT b FROM t)",
            r#""a" > ALL (SELECT "b" FROM "t")"#,
        ),
    ];
    for (source, target) in cases {
        assert_eq!(expr(source), target, "{source}");
    }
}

#[test]
fn value_outside_a_domain_is_a_column() {
    assert_eq!(expr("VALUE > 0"), r#""value" > 0"#);
}

#[test]
fn names_go_through_the_callback() {
    let ctx = ExprContext::new().with_names(|kind, name| match kind {
        NameKind::Table | NameKind::Sequence => format!("\"s\".{}", quote(&pg_name(name))),
        _ => quote(&pg_name(name)),
    });
    assert_eq!(
        translate_expression("GEN_ID(G, 1) + (SELECT MAX(ID) FROM T)", &ctx).unwrap(),
        r#"nextval('"s"."g"') + (SELECT max("id") FROM "s"."t")"#
    );
}

#[test]
fn what_is_not_translated_says_what_and_where() {
    let cases = [
        ("HASH(a)", "HASH", 1),
        (
            "a\n + GEN_ID(g, 2)",
            "GEN_ID with a step other than 0 or 1",
            2,
        ),
        ("a COLLATE UNICODE_CI", "COLLATE", 1),
        ("(a || b)[1]", "an element of an expression", 1),
        ("a[1:2]", "an array slice", 1),
        ("FIRST_DAY(OF MONTH FROM a)", "FIRST_DAY(OF MONTH)", 1),
        ("CURRENT_ROLE", "CURRENT_ROLE", 1),
        ("a +", "the end of the text", 1),
        ("a b", "B", 1),
        ("'open", "an unclosed string", 1),
        ("EXTRACT(TIMEZONE_HOUR FROM a)", "EXTRACT(TIMEZONE_HOUR)", 1),
    ];
    for (source, construct, line) in cases {
        let u = refused(source);
        assert_eq!(
            (u.construct.as_str(), u.line),
            (construct, line),
            "{source}: {u}"
        );
    }
}

#[test]
fn computed_columns_only_where_deterministic() {
    let ctx = ExprContext::new();
    assert_eq!(
        translate_computed("COMPUTED BY (last_name || ', ' || first_name)", &ctx).unwrap(),
        r#""last_name" || ', ' || "first_name""#
    );
    assert_eq!(
        translate_computed("(old_salary + old_salary * percent_change / 100)", &ctx).unwrap(),
        r#""old_salary" + "old_salary" * "percent_change" / 100"#
    );
    for (source, construct) in [
        ("(CURRENT_DATE - hire_date)", "CURRENT_DATE"),
        ("((SELECT COUNT(*) FROM t))", "a subquery"),
        ("(a + GEN_ID(g, 1))", "a sequence"),
        ("(CAST('NOW' AS DATE) - d)", "'NOW'"),
    ] {
        assert_eq!(
            translate_computed(source, &ctx).unwrap_err().construct,
            construct,
            "{source}"
        );
    }
}

#[test]
fn index_expressions_and_conditions_only_where_deterministic() {
    let ctx = ExprContext::new();
    assert_eq!(
        translate_index_expression("COMPUTED BY (UPPER(last_name))", &ctx).unwrap(),
        r#"upper("last_name")"#
    );
    // RDB$CONDITION_SOURCE keeps its WHERE.
    assert_eq!(
        translate_index_expression("WHERE status = 'open' AND qty > 0", &ctx).unwrap(),
        r#""status" = 'open' AND "qty" > 0"#
    );
    assert_eq!(
        translate_index_expression("where name starting with 'A'", &ctx).unwrap(),
        r#"starts_with(CAST("name" AS text), CAST('A' AS text))"#
    );
    let u = translate_index_expression("WHERE made > CURRENT_DATE", &ctx).unwrap_err();
    assert_eq!(u.construct, "CURRENT_DATE");
    assert!(u.reason.contains("PostgreSQL indexes only"), "{u}");
}

#[test]
fn views() {
    let cases = [
        (
            "SELECT emp_no, first_name, last_name, phone_ext, location, phone_no \
             FROM employee, department WHERE employee.dept_no = department.dept_no",
            r#"SELECT "emp_no", "first_name", "last_name", "phone_ext", "location", "phone_no" FROM "employee", "department" WHERE "employee"."dept_no" = "department"."dept_no""#,
        ),
        ("SELECT FIRST 5 SKIP 10 a FROM t ORDER BY a", r#"SELECT "a" FROM "t" ORDER BY "a" NULLS FIRST LIMIT 5 OFFSET 10"#),
        ("SELECT a FROM t ORDER BY a DESC ROWS 3", r#"SELECT "a" FROM "t" ORDER BY "a" DESC NULLS LAST LIMIT 3"#),
        ("SELECT a FROM t ROWS 2 TO 4", r#"SELECT "a" FROM "t" LIMIT (4 - 2 + 1) OFFSET (2 - 1)"#),
        ("SELECT a FROM t OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY", r#"SELECT "a" FROM "t" LIMIT 3 OFFSET 2"#),
        ("SELECT CURRENT_DATE FROM RDB$DATABASE", "SELECT CURRENT_DATE"),
        ("SELECT 1 FROM RDB$DATABASE r JOIN t ON 1 = 1", r#"SELECT 1 FROM (SELECT 1) AS "r" JOIN "t" ON 1 = 1"#),
        (
            "SELECT d.dept_no, LIST(e.last_name, '; ') FROM department d LEFT OUTER JOIN employee e ON e.dept_no = d.dept_no GROUP BY d.dept_no HAVING COUNT(*) > 1",
            r#"SELECT "d"."dept_no", string_agg(CAST("e"."last_name" AS text), '; ') FROM "department" AS "d" LEFT JOIN "employee" AS "e" ON "e"."dept_no" = "d"."dept_no" GROUP BY "d"."dept_no" HAVING count(*) > 1"#,
        ),
        ("SELECT LIST(DISTINCT a) FROM t", r#"SELECT string_agg(DISTINCT CAST("a" AS text), ',') FROM "t""#),
        (
            "SELECT x.n FROM (SELECT COUNT(*) n FROM t) x",
            r#"SELECT "x"."n" FROM (SELECT count(*) AS "n" FROM "t") AS "x""#,
        ),
        ("SELECT n FROM (SELECT 1 AS n FROM t)", r#"SELECT "n" FROM (SELECT 1 AS "n" FROM "t") AS "fb_derived_1""#),
        (
            "WITH RECURSIVE r (n) AS (SELECT 1 FROM RDB$DATABASE UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
            r#"WITH RECURSIVE "r" ("n") AS (SELECT 1 UNION ALL SELECT "n" + 1 FROM "r" WHERE "n" < 3) SELECT "n" FROM "r""#,
        ),
        (
            "SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c DESC) FROM t",
            r#"SELECT "a", row_number() OVER (PARTITION BY "b" ORDER BY "c" DESC NULLS LAST) FROM "t""#,
        ),
        ("SELECT a FROM t UNION SELECT b FROM u", r#"SELECT "a" FROM "t" UNION SELECT "b" FROM "u""#),
        ("SELECT t.* FROM t JOIN u USING (id)", r#"SELECT "t".* FROM "t" JOIN "u" USING ("id")"#),
        ("SELECT * FROM t NATURAL JOIN u CROSS JOIN v", r#"SELECT * FROM "t" NATURAL JOIN "u" CROSS JOIN "v""#),
        ("SELECT a FROM t PLAN (t NATURAL)", r#"SELECT "a" FROM "t""#),
        ("SELECT p.x FROM proc(1, 'a') p", r#"SELECT "p"."x" FROM "proc"(1, 'a') AS "p""#),
        ("SELECT a FROM t WHERE b = 1 FOR UPDATE", r#"SELECT "a" FROM "t" WHERE "b" = 1"#),
        ("SELECT FIRST 1 a FROM t ORDER BY a WITH LOCK SKIP LOCKED", r#"SELECT "a" FROM "t" ORDER BY "a" NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED"#),
        ("SELECT a FROM t FOR UPDATE OF a WITH LOCK", r#"SELECT "a" FROM "t" FOR UPDATE"#),
    ];
    for (source, target) in cases {
        assert_eq!(view(source), target, "{source}");
    }
}

#[test]
fn views_read_what_they_name() {
    assert_eq!(
        view_reads("SELECT * FROM a JOIN (SELECT 1 FROM b) x ON 1=1, p(1)").unwrap(),
        ["A", "B", "P"]
    );
    let u = translate_view("SELECT a\nFROM MON$ATTACHMENTS", &ExprContext::new()).unwrap_err();
    assert_eq!((u.construct.as_str(), u.line), ("MON$ATTACHMENTS", 2));
}

#[test]
fn exception_states_are_stable_and_of_their_own_class() {
    assert_eq!(exception_sqlstate(1), "FB001");
    assert_eq!(exception_sqlstate(36), "FB010");
    assert_eq!(exception_sqlstate(46655), "FBZZZ");
}

fn exceptions(name: &str) -> Option<Exception> {
    match name {
        "REASSIGN_SALES" => Some(Exception {
            message: "Reassign the sales records before deleting this employee.".into(),
            sqlstate: "FB002".into(),
        }),
        "TOO_BIG" => Some(Exception {
            message: "Order @1 too big (@2) @3 @@1 @10 it's @".into(),
            sqlstate: "FB003".into(),
        }),
        _ => None,
    }
}

#[test]
fn key_generating_triggers_are_recognised() {
    let ddl = "CREATE TRIGGER set_emp_no FOR employee\nBEFORE INSERT AS\nBEGIN\n    if (new.emp_no is null) then\n    new.emp_no = gen_id(emp_no_gen, 1);\nEND";
    assert_eq!(
        key_generator(ddl),
        Some(KeyGenerator {
            table: "EMPLOYEE".into(),
            column: "EMP_NO".into(),
            sequence: "EMP_NO_GEN".into()
        })
    );
    let next = "CREATE TRIGGER T FOR T ACTIVE BEFORE INSERT POSITION 0 AS BEGIN IF (NEW.ID IS NULL) THEN BEGIN NEW.ID = NEXT VALUE FOR G; END END";
    assert_eq!(key_generator(next).unwrap().sequence, "G");
    for other in [
        "CREATE TRIGGER T FOR T AFTER INSERT AS BEGIN IF (NEW.ID IS NULL) THEN NEW.ID = GEN_ID(G, 1); END",
        "CREATE TRIGGER T FOR T BEFORE INSERT AS BEGIN IF (NEW.ID IS NULL) THEN NEW.X = GEN_ID(G, 1); END",
        "CREATE TRIGGER T FOR T BEFORE INSERT AS BEGIN IF (NEW.ID IS NULL) THEN NEW.ID = GEN_ID(G, 2); END",
        "CREATE TRIGGER T FOR T BEFORE INSERT AS BEGIN NEW.ID = GEN_ID(G, 1); END",
    ] {
        assert_eq!(key_generator(other), None, "{other}");
    }
}

#[test]
fn triggers() {
    let ddl = "CREATE TRIGGER save_salary_change FOR employee\nAFTER UPDATE AS\nBEGIN\n    IF (old.salary <> new.salary) THEN\n        INSERT INTO salary_history\n            (emp_no, change_date, updater_id, old_salary, percent_change)\n        VALUES (\n            old.emp_no,\n            'NOW',\n            user,\n            old.salary,\n            (new.salary - old.salary) * 100 / old.salary);\nEND";
    let out = translate_trigger(ddl, &ExprContext::new().with_search_path("emp")).unwrap();
    assert_eq!(
        out[0],
        "CREATE FUNCTION \"save_salary_change_trigger\"() RETURNS trigger LANGUAGE plpgsql SET search_path TO \"emp\" SET standard_conforming_strings TO on AS $fb$\n\
         #variable_conflict use_column\n\
         <<fb_local>>\n\
         BEGIN\n\
         \x20 IF OLD.\"salary\" <> NEW.\"salary\" THEN\n\
         \x20   INSERT INTO \"salary_history\" (\"emp_no\", \"change_date\", \"updater_id\", \"old_salary\", \"percent_change\") VALUES (OLD.\"emp_no\", LOCALTIMESTAMP, CURRENT_USER, OLD.\"salary\", (NEW.\"salary\" - OLD.\"salary\") * 100 / OLD.\"salary\");\n\
         \x20 END IF;\n\
         \x20 RETURN NULL;\n\
         END fb_local;\n$fb$"
    );
    assert_eq!(
        out[1],
        "CREATE TRIGGER \"00000_save_salary_change\" AFTER UPDATE ON \"employee\" FOR EACH ROW EXECUTE FUNCTION \"save_salary_change_trigger\"()"
    );
    let multi = "CREATE TRIGGER audit FOR t INACTIVE BEFORE INSERT OR UPDATE OR DELETE POSITION 5 AS\nDECLARE VARIABLE n INTEGER = 0;\nBEGIN\n  IF (DELETING) THEN EXIT;\n  IF (INSERTING OR UPDATING) THEN NEW.changed = CURRENT_TIMESTAMP;\n  n = n + 1;\nEND";
    let out = translate_trigger(multi, &ExprContext::new()).unwrap();
    assert!(
        out[0].contains("DECLARE\n  \"n\" integer := 0;\n"),
        "{}",
        out[0]
    );
    assert!(out[0].contains("  IF (TG_OP = 'DELETE') THEN\n    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;\n    RETURN NEW;\n  END IF;\n"), "{}", out[0]);
    assert!(out[0].contains("IF (TG_OP = 'INSERT') OR (TG_OP = 'UPDATE') THEN\n    NEW.\"changed\" := LOCALTIMESTAMP;"), "{}", out[0]);
    assert!(
        out[0].contains("fb_local.\"n\" := fb_local.\"n\" + 1;"),
        "{}",
        out[0]
    );
    assert_eq!(
        out[1],
        "CREATE TRIGGER \"00005_audit\" BEFORE INSERT OR UPDATE OR DELETE ON \"t\" FOR EACH ROW EXECUTE FUNCTION \"audit_trigger\"()"
    );
    assert_eq!(out[2], "ALTER TABLE \"t\" DISABLE TRIGGER \"00005_audit\"");
    let event =
        "CREATE TRIGGER post_new_order FOR sales AFTER INSERT AS BEGIN POST_EVENT 'new_order'; END";
    assert!(translate_trigger(event, &ExprContext::new()).unwrap()[0]
        .contains("PERFORM pg_notify('new_order', '');"));
}

#[test]
fn procedures() {
    let ddl = "CREATE PROCEDURE dept_budget (dno CHAR(3))\nRETURNS (tot decimal(12,2)) AS\n\tDECLARE VARIABLE sumb DECIMAL(12, 2);\n\tDECLARE VARIABLE rdno CHAR(3);\n\tDECLARE VARIABLE cnt INTEGER;\nBEGIN\n\ttot = 0;\n\tSELECT budget FROM department WHERE dept_no = :dno INTO :tot;\n\tSELECT count(budget) FROM department WHERE head_dept = :dno INTO :cnt;\n\tIF (cnt = 0) THEN\n\t\tSUSPEND;\n\tFOR SELECT dept_no\n\t\tFROM department\n\t\tWHERE head_dept = :dno\n\t\tINTO :rdno\n\tDO\n\t\tBEGIN\n\t\t\tEXECUTE PROCEDURE dept_budget :rdno RETURNING_VALUES :sumb;\n\t\t\ttot = tot + sumb;\n\t\tEND\n\tSUSPEND;\nEND";
    let out = translate_procedure(ddl, &ExprContext::new()).unwrap();
    assert_eq!(out.len(), 1);
    let expected = "CREATE FUNCTION \"dept_budget\"(\"dno\" char(3)) RETURNS TABLE (\"tot\" numeric(12,2)) LANGUAGE plpgsql AS $fb$\n\
#variable_conflict use_column\n\
<<fb_local>>\n\
DECLARE\n\
\x20 \"dno\" char(3) := \"dept_budget\".\"dno\";\n\
\x20 \"sumb\" numeric(12,2);\n\
\x20 \"rdno\" char(3);\n\
\x20 \"cnt\" integer;\n\
\x20 fb_row_1 record;\n\
\x20 fb_row_2 record;\n\
\x20 fb_row_3 record;\n\
\x20 fb_rows integer;\n\
BEGIN\n\
\x20 \"dept_budget\".\"tot\" := CAST(0 AS numeric(12,2));\n\
\x20 fb_rows := 0;\n\
\x20 FOR fb_row_1 IN SELECT \"budget\" AS \"fb_1\" FROM \"department\" WHERE \"dept_no\" = fb_local.\"dno\" LOOP\n\
\x20   fb_rows := fb_rows + 1;\n\
\x20   IF fb_rows > 1 THEN RAISE EXCEPTION 'multiple rows in singleton select' USING ERRCODE = '21000'; END IF;\n\
\x20   \"dept_budget\".\"tot\" := CAST(fb_row_1.\"fb_1\" AS numeric(12,2));\n\
\x20 END LOOP;\n\
\x20 fb_rows := 0;\n\
\x20 FOR fb_row_2 IN SELECT count(\"budget\") AS \"fb_1\" FROM \"department\" WHERE \"head_dept\" = fb_local.\"dno\" LOOP\n\
\x20   fb_rows := fb_rows + 1;\n\
\x20   IF fb_rows > 1 THEN RAISE EXCEPTION 'multiple rows in singleton select' USING ERRCODE = '21000'; END IF;\n\
\x20   fb_local.\"cnt\" := fb_row_2.\"fb_1\";\n\
\x20 END LOOP;\n\
\x20 IF fb_local.\"cnt\" = 0 THEN\n\
\x20   RETURN NEXT;\n\
\x20 END IF;\n\
\x20 FOR fb_row_3 IN SELECT \"dept_no\" AS \"fb_1\" FROM \"department\" WHERE \"head_dept\" = fb_local.\"dno\" LOOP\n\
\x20   fb_local.\"rdno\" := fb_row_3.\"fb_1\";\n\
\x20   SELECT * INTO fb_local.\"sumb\" FROM \"dept_budget\"(fb_local.\"rdno\") LIMIT 1;\n\
\x20   \"dept_budget\".\"tot\" := CAST(\"dept_budget\".\"tot\" + fb_local.\"sumb\" AS numeric(12,2));\n\
\x20 END LOOP;\n\
\x20 RETURN NEXT;\n\
END fb_local;\n$fb$";
    assert_eq!(out[0], expected);

    let exec = "CREATE PROCEDURE delete_employee (emp_num INTEGER)\nAS\n\tDECLARE VARIABLE any_sales INTEGER;\nBEGIN\n\tany_sales = 0;\n\tIF (any_sales > 0) THEN\n\tBEGIN\n\t\tEXCEPTION reassign_sales;\n\tEND\n\tDELETE FROM employee WHERE emp_no = :emp_num;\nEND";
    let ctx = ExprContext::new().with_exceptions(exceptions);
    let out = translate_procedure(exec, &ctx).unwrap();
    assert!(out[0].starts_with("CREATE FUNCTION \"delete_employee\"(\"emp_num\" integer) RETURNS void LANGUAGE plpgsql AS"), "{}", out[0]);
    assert!(out[0].contains("RAISE EXCEPTION USING ERRCODE = 'FB002', MESSAGE = 'Reassign the sales records before deleting this employee.', DETAIL = 'Firebird exception REASSIGN_SALES';"), "{}", out[0]);
    assert!(
        out[0].contains("DELETE FROM \"employee\" WHERE \"emp_no\" = fb_local.\"emp_num\";"),
        "{}",
        out[0]
    );

    let outs = "CREATE PROCEDURE p (a INTEGER) RETURNS (b INTEGER, c VARCHAR(5)) AS BEGIN b = a * 2; c = 'x'; END";
    let out = translate_procedure(outs, &ExprContext::new()).unwrap();
    assert!(out[0].starts_with("CREATE FUNCTION \"p\"(\"a\" integer, OUT \"b\" integer, OUT \"c\" varchar(5)) LANGUAGE plpgsql AS"), "{}", out[0]);

    let handler = "CREATE PROCEDURE add_emp_proj (emp_no SMALLINT, proj_id CHAR(5)) AS\nBEGIN\n\tBEGIN\n\tINSERT INTO employee_project (emp_no, proj_id) VALUES (:emp_no, :proj_id);\n\tWHEN SQLCODE -530 DO\n\t\tEXCEPTION reassign_sales;\n\tEND\nEND";
    let out = translate_procedure(handler, &ctx).unwrap();
    assert!(out[0].contains("  BEGIN\n    INSERT INTO \"employee_project\" (\"emp_no\", \"proj_id\") VALUES (fb_local.\"emp_no\", fb_local.\"proj_id\");\n  EXCEPTION\n    WHEN foreign_key_violation THEN\n      RAISE EXCEPTION"), "{}", out[0]);
}

#[test]
fn psql_statements() {
    let body = |b: &str| {
        let ddl = format!(
            "CREATE PROCEDURE p RETURNS (r INTEGER) AS DECLARE i INTEGER = 0; BEGIN {b} END"
        );
        translate_procedure(&ddl, &ExprContext::new().with_exceptions(exceptions))
            .map(|s| s[0].clone())
    };
    let cases = [
        ("WHILE (i < 5) DO i = i + 1;", "WHILE fb_local.\"i\" < 5 LOOP\n    fb_local.\"i\" := fb_local.\"i\" + 1;\n  END LOOP;"),
        ("l1: WHILE (i < 5) DO BEGIN IF (i = 2) THEN LEAVE l1; i = i + 1; END", "<<l1>> WHILE fb_local.\"i\" < 5 LOOP\n    IF fb_local.\"i\" = 2 THEN\n      EXIT l1;\n    END IF;"),
        ("WHILE (1 = 1) DO BREAK;", "LOOP\n    EXIT;"),
        ("UPDATE t SET a = 1 WHERE b = :i; r = ROW_COUNT;", "UPDATE \"t\" SET \"a\" = 1 WHERE \"b\" = fb_local.\"i\";\n  GET DIAGNOSTICS fb_row_count = ROW_COUNT;\n  \"p\".\"r\" := CAST(fb_row_count AS integer);"),
        ("BEGIN r = 1; WHEN ANY DO r = 0; END", "EXCEPTION\n    WHEN OTHERS THEN\n      \"p\".\"r\" := CAST(0 AS integer);"),
        ("BEGIN r = 1; WHEN EXCEPTION reassign_sales DO EXCEPTION; END", "WHEN SQLSTATE 'FB002' THEN\n      RAISE;"),
        ("EXCEPTION reassign_sales 'no: ' || i;", "MESSAGE = 'no: ' || fb_local.\"i\""),
        ("EXCEPTION too_big USING (i, NULL);", "MESSAGE = 'Order ' || coalesce(CAST(fb_local.\"i\" AS text), '*** null ***') || ' too big (' || coalesce(CAST(NULL AS text), '*** null ***') || ') @3 @1 ' || coalesce(CAST(fb_local.\"i\" AS text), '*** null ***') || '0 it''s @', DETAIL"),
        ("EXECUTE STATEMENT 'DELETE FROM t';", "DELETE FROM \"t\";"),
        ("BEGIN r = 1 / i; WHEN SQLCODE -802 DO r = 0; END", "WHEN numeric_value_out_of_range OR division_by_zero OR string_data_right_truncation THEN"),
        ("BEGIN SELECT a FROM t INTO :r; WHEN GDSCODE sing_select_err, GDSCODE arith_except DO r = 0; END", "WHEN cardinality_violation OR numeric_value_out_of_range OR division_by_zero OR string_data_right_truncation THEN"),
        ("EXECUTE PROCEDURE q(1);", "PERFORM * FROM \"q\"(1);"),
        ("EXIT;", "RETURN;"),
        ("r = CURRENT_CONNECTION;", "pg_backend_pid()"),
    ];
    for (b, expected) in cases {
        let out = body(b).unwrap_or_else(|e| panic!("{b}: {e}"));
        if b.starts_with("WHILE (1 = 1)") {
            assert!(out.contains("WHILE 1 = 1 LOOP\n    EXIT;"), "{b}\n{out}");
            continue;
        }
        assert!(out.contains(expected), "{b}\n{out}");
    }
    let refused = [
        (
            "r = :nope;",
            ":NOPE",
            "not a variable or parameter of the routine",
        ),
        (
            "EXCEPTION unknown_exc;",
            "EXCEPTION UNKNOWN_EXC",
            "an exception not in the catalog",
        ),
        (
            "EXECUTE STATEMENT 'SELECT ' || i;",
            "EXECUTE STATEMENT",
            "its SQL is built when it runs: translate the statements it can run",
        ),
        (
            "BEGIN r = 1; WHEN SQLCODE -1 DO r = 0; END",
            "WHEN SQLCODE -1",
            "no PostgreSQL condition known for this SQLCODE",
        ),
        (
            "SELECT a, b FROM t INTO :r;",
            "INTO",
            "the number of targets is not the number of columns",
        ),
    ];
    for (b, construct, reason) in refused {
        let u = body(b).unwrap_err();
        assert_eq!(
            (u.construct.as_str(), u.reason.as_str(), u.line),
            (construct, reason, 1),
            "{b}"
        );
    }
}

#[test]
fn untranslated_points_at_the_line_it_stopped_at() {
    let ddl = "CREATE PROCEDURE p AS\nBEGIN\n  EXIT;\n  OPEN c;\nEND";
    let u = translate_procedure(ddl, &ExprContext::new()).unwrap_err();
    assert_eq!((u.construct.as_str(), u.line), ("C", 4));
}

#[test]
fn functions() {
    let ddl = "CREATE FUNCTION twice (x INTEGER) RETURNS INTEGER DETERMINISTIC AS BEGIN RETURN x * 2; END";
    assert_eq!(
        translate_function(ddl, &ExprContext::new()).unwrap()[0],
        "CREATE FUNCTION \"twice\"(\"x\" integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $fb$\n#variable_conflict use_column\n<<fb_local>>\nDECLARE\n  \"x\" integer := \"twice\".\"x\";\nBEGIN\n  RETURN CAST(fb_local.\"x\" * 2 AS integer);\nEND fb_local;\n$fb$"
    );
}

#[test]
fn column_types_make_date_arithmetic_firebirds() {
    let ctx = ExprContext::new().with_column_types(|c| {
        matches!(c, "SHIP_DATE" | "ORDER_DATE").then(|| "TIMESTAMP".to_string())
    });
    assert_eq!(
        translate_computed("(ship_date - order_date)", &ctx).unwrap(),
        r#"(EXTRACT(EPOCH FROM "ship_date" - "order_date") / 86400)"#
    );
    assert_eq!(
        translate_expression("ship_date + 1", &ctx).unwrap(),
        r#""ship_date" + 1 * INTERVAL '1 day'"#
    );
}

#[test]
fn types() {
    let ctx = ExprContext::new();
    for (source, target) in [
        ("VARCHAR(37) CHARACTER SET UTF8", "varchar(37)"),
        ("NUMERIC(18,9)", "numeric(18,9)"),
        ("TIMESTAMP", "timestamp"),
        ("TIMESTAMP WITH TIME ZONE", "timestamp with time zone"),
        (
            "BLOB SUB_TYPE TEXT SEGMENT SIZE 80 CHARACTER SET UTF8",
            "text",
        ),
        ("INT128", "numeric(39,0)"),
        ("FLOAT", "real"),
    ] {
        assert_eq!(translate_type(source, &ctx).unwrap(), target, "{source}");
    }
    assert!(translate_type("INTEGER [1:4]", &ctx).is_err());
}

#[test]
fn routines_say_which_procedures_they_call() {
    let ddl = "CREATE PROCEDURE ALL_LANGS RETURNS (L VARCHAR(15)) AS BEGIN \
               FOR SELECT languages FROM show_langs (:l, 1, 'x') INTO :l DO SUSPEND; \
               EXECUTE PROCEDURE other; \
               IF (1 = 1) THEN SELECT x FROM (SELECT x FROM third(1)) d INTO :l; END";
    assert_eq!(
        routine_calls(ddl).unwrap(),
        ["OTHER", "SHOW_LANGS", "THIRD"]
    );
    let writes = "CREATE PROCEDURE P AS BEGIN INSERT INTO A (X) SELECT Y FROM B; \
                  UPDATE C SET X = 1; FOR SELECT X FROM D JOIN E ON 1 = 1 INTO :X DO DELETE FROM F; END";
    assert_eq!(
        routine_tables(writes).unwrap(),
        ["A", "B", "C", "D", "E", "F"]
    );
    assert!(
        routine_tables("CREATE PROCEDURE P RETURNS (K INTEGER) AS BEGIN K = 1; SUSPEND; END")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn psql_functions_of_the_database_are_called_by_name() {
    let ctx = ExprContext::new().with_functions(|n| n == "DISCOUNTED");
    assert_eq!(
        translate_expression("DISCOUNTED(price, 10)", &ctx).unwrap(),
        r#""discounted"("price", 10)"#
    );
    assert!(translate_expression("OTHER(price)", &ctx).is_err());
}

#[test]
fn literal_results_are_padded_where_firebird_pads_them() {
    // Measured on Firebird 5: a searched CASE (and IIF) of string
    // literals is a CHAR as long as the longest, and `||` keeps it; a
    // simple CASE (and DECODE) is not padded; a comparison ignores it.
    for (source, target) in [
        (
            "IIF(a > 0, 'cheap', 'dear') || ':'",
            r#"CASE WHEN "a" > 0 THEN 'cheap' ELSE 'dear ' END || ':'"#,
        ),
        (
            "'<' || CASE WHEN a = 1 THEN 'y' ELSE 'zz' END",
            r#"'<' || CASE WHEN "a" = 1 THEN 'y ' ELSE 'zz' END"#,
        ),
        (
            "CASE a WHEN 1 THEN 'x' ELSE 'yy' END || ':'",
            r#"CASE "a" WHEN 1 THEN 'x' ELSE 'yy' END || ':'"#,
        ),
        (
            "DECODE(a, 1, 'x', 'long') || ':'",
            r#"CASE "a" WHEN 1 THEN 'x' ELSE 'long' END || ':'"#,
        ),
        (
            "IIF(a > 0, 'cheap', 'dear') = b",
            r#"CASE WHEN "a" > 0 THEN 'cheap' ELSE 'dear' END = "b""#,
        ),
        (
            "IIF(a > 0, b, 'dear') || ':'",
            r#"CASE WHEN "a" > 0 THEN "b" ELSE 'dear' END || ':'"#,
        ),
    ] {
        assert_eq!(expr(source), target, "{source}");
    }
}

/// A procedure's body, translated, with the exceptions above and the
/// table T (ID, A, B; key ID) known.
fn routine(header: &str, body: &str) -> std::result::Result<String, Untranslated> {
    let ddl = format!("CREATE PROCEDURE p {header} AS {body}");
    let ctx = ExprContext::new()
        .with_exceptions(exceptions)
        .with_tables(|t| {
            (t == "T").then(|| TableShape {
                columns: vec!["ID".into(), "A".into(), "B".into()],
                primary_key: vec!["ID".into()],
            })
        });
    translate_procedure(&ddl, &ctx).map(|s| s[0].clone())
}

#[test]
fn cursors() {
    let out = routine(
        "(k INTEGER) RETURNS (r INTEGER)",
        "DECLARE x INTEGER; DECLARE c CURSOR FOR (SELECT a FROM t WHERE id > :k ORDER BY id); \
         BEGIN OPEN c; WHILE (1 = 1) DO BEGIN FETCH c INTO :x; IF (ROW_COUNT = 0) THEN LEAVE; \
         r = x; SUSPEND; END CLOSE c; END",
    )
    .unwrap();
    for part in [
        "  \"fb_cursor_c\" CURSOR FOR SELECT \"a\" AS \"fb_1\" FROM \"t\" WHERE \"id\" > fb_local.\"k\" ORDER BY \"id\" NULLS FIRST;\n",
        "BEGIN\n  \"fb_cursor_c\" := NULL;\n  OPEN \"fb_cursor_c\";\n",
        "    FETCH \"fb_cursor_c\" INTO fb_row_1;\n    GET DIAGNOSTICS fb_row_count = ROW_COUNT;\n    IF FOUND THEN\n      fb_local.\"x\" := fb_row_1.\"fb_1\";\n    END IF;\n",
        "  CLOSE \"fb_cursor_c\";\n",
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
    let positioned = routine(
        "",
        "DECLARE x INTEGER; BEGIN FOR SELECT a FROM t ORDER BY id INTO :x AS CURSOR cur DO \
         IF (x < 0) THEN DELETE FROM t WHERE CURRENT OF cur; \
         ELSE UPDATE t SET a = a + 1 WHERE CURRENT OF cur; END",
    )
    .unwrap();
    for part in [
        "\"fb_cursor_cur\" CURSOR FOR SELECT \"a\" AS \"fb_1\" FROM \"t\" ORDER BY \"id\" NULLS FIRST FOR UPDATE;",
        "FOR fb_row_1 IN \"fb_cursor_cur\" LOOP\n    fb_local.\"x\" := fb_row_1.\"fb_1\";",
        "DELETE FROM \"t\" WHERE CURRENT OF \"fb_cursor_cur\";",
        "UPDATE \"t\" SET \"a\" = \"a\" + 1 WHERE CURRENT OF \"fb_cursor_cur\";",
    ] {
        assert!(positioned.contains(part), "{part}\n{positioned}");
    }
    // Two loops may name their cursors alike.
    let twice = routine(
        "",
        "DECLARE x INTEGER; BEGIN \
         FOR SELECT a FROM t INTO :x AS CURSOR c DO DELETE FROM t WHERE CURRENT OF c; \
         FOR SELECT b FROM t INTO :x AS CURSOR c DO DELETE FROM t WHERE CURRENT OF c; END",
    )
    .unwrap();
    for part in [
        "\"fb_cursor_c\" CURSOR FOR SELECT \"a\" AS \"fb_1\" FROM \"t\" FOR UPDATE;",
        "\"fb_cursor_c_2\" CURSOR FOR SELECT \"b\" AS \"fb_1\" FROM \"t\" FOR UPDATE;",
        "  \"fb_cursor_c\" := NULL;\n  \"fb_cursor_c_2\" := NULL;\n",
        "DELETE FROM \"t\" WHERE CURRENT OF \"fb_cursor_c_2\";",
    ] {
        assert!(twice.contains(part), "{part}\n{twice}");
    }
    // Without INTO: the loop reads the row as `c.column` (`:c.column`).
    let fields = routine(
        "",
        "BEGIN FOR SELECT id, a FROM t AS CURSOR c DO \
         UPDATE t SET b = c.a + :c.id WHERE CURRENT OF c; END",
    )
    .unwrap();
    for part in [
        "\"fb_cursor_c\" CURSOR FOR SELECT \"id\", \"a\" FROM \"t\" FOR UPDATE;",
        "FOR fb_row_1 IN \"fb_cursor_c\" LOOP\n    UPDATE \"t\" SET \"b\" = fb_row_1.\"a\" + fb_row_1.\"id\" WHERE CURRENT OF \"fb_cursor_c\";",
    ] {
        assert!(fields.contains(part), "{part}\n{fields}");
    }
    for (body, construct, reason) in [
        (
            "BEGIN OPEN nope; END",
            "NOPE",
            "not a cursor of the routine (FOR SELECT ... AS CURSOR or DECLARE ... CURSOR)",
        ),
        (
            "DECLARE c SCROLL CURSOR FOR (SELECT a FROM t); BEGIN END",
            "a SCROLL cursor",
            "PL/pgSQL cursors fetch forward only here",
        ),
        (
            "DECLARE x INTEGER; DECLARE c CURSOR FOR (SELECT a, b FROM t); BEGIN FETCH c INTO :x; END",
            "INTO",
            "the number of targets is not the number of columns",
        ),
    ] {
        let u = routine("", body).unwrap_err();
        assert_eq!((u.construct.as_str(), u.reason.as_str()), (construct, reason), "{body}");
    }
}

#[test]
fn update_or_insert() {
    let out = routine(
        "(i INTEGER, v VARCHAR(10))",
        "BEGIN UPDATE OR INSERT INTO t (id, a) VALUES (:i, :v) MATCHING (id); END",
    )
    .unwrap();
    assert!(
        out.contains(
            "  UPDATE \"t\" SET \"id\" = fb_local.\"i\", \"a\" = fb_local.\"v\" WHERE \"id\" IS NOT DISTINCT FROM fb_local.\"i\";\n  IF NOT FOUND THEN\n    INSERT INTO \"t\" (\"id\", \"a\") VALUES (fb_local.\"i\", fb_local.\"v\");\n  END IF;\n"
        ),
        "{out}"
    );
    // Without MATCHING: the primary key; without columns: the table's.
    let out = routine(
        "(i INTEGER)",
        "BEGIN UPDATE OR INSERT INTO t VALUES (:i, 'x', NULL); i = ROW_COUNT; END",
    )
    .unwrap();
    assert!(
        out.contains("UPDATE \"t\" SET \"id\" = fb_local.\"i\", \"a\" = 'x', \"b\" = NULL WHERE \"id\" IS NOT DISTINCT FROM fb_local.\"i\";\n  GET DIAGNOSTICS fb_row_count = ROW_COUNT;\n  IF NOT FOUND THEN\n    INSERT INTO \"t\" (\"id\", \"a\", \"b\") VALUES (fb_local.\"i\", 'x', NULL);\n    GET DIAGNOSTICS fb_row_count = ROW_COUNT;\n  END IF;"),
        "{out}"
    );
    for (body, construct) in [
        (
            "BEGIN UPDATE OR INSERT INTO u (id) VALUES (1); END",
            "UPDATE OR INSERT without MATCHING",
        ),
        (
            "BEGIN UPDATE OR INSERT INTO t (id, a) VALUES (GEN_ID(g, 1), 1) MATCHING (id); END",
            "UPDATE OR INSERT",
        ),
        (
            "BEGIN UPDATE OR INSERT INTO t (a) VALUES (1) MATCHING (id); END",
            "MATCHING ID",
        ),
    ] {
        assert_eq!(
            routine("", body).unwrap_err().construct,
            construct,
            "{body}"
        );
    }
}

#[test]
fn merge() {
    let out = routine(
        "(k INTEGER)",
        "BEGIN MERGE INTO t USING (SELECT id, a FROM u WHERE id > :k) s ON t.id = s.id \
         WHEN MATCHED AND s.a IS NULL THEN DELETE \
         WHEN MATCHED THEN UPDATE SET a = s.a \
         WHEN NOT MATCHED THEN INSERT (id, a) VALUES (s.id, s.a); END",
    )
    .unwrap();
    assert!(
        out.contains("  MERGE INTO \"t\" USING (SELECT \"id\", \"a\" FROM \"u\" WHERE \"id\" > fb_local.\"k\") AS \"s\" ON \"t\".\"id\" = \"s\".\"id\" WHEN MATCHED AND \"s\".\"a\" IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET \"a\" = \"s\".\"a\" WHEN NOT MATCHED THEN INSERT (\"id\", \"a\") VALUES (\"s\".\"id\", \"s\".\"a\");\n"),
        "{out}"
    );
    let u = routine(
        "",
        "BEGIN MERGE INTO t USING u ON t.id = u.id WHEN NOT MATCHED BY SOURCE THEN DELETE; END",
    )
    .unwrap_err();
    assert_eq!(u.construct, "WHEN NOT MATCHED BY SOURCE");
}

#[test]
fn execute_statement_with_parameters() {
    let out = routine(
        "(k INTEGER) RETURNS (r INTEGER)",
        "DECLARE a INTEGER = 5; BEGIN \
         EXECUTE STATEMENT ('UPDATE t SET a = :a WHERE id = :id') (a := k * 2, id := 7); \
         EXECUTE STATEMENT ('SELECT COUNT(*) FROM t WHERE a > ?') (:k) INTO :r; \
         FOR EXECUTE STATEMENT 'SELECT id FROM t WHERE a = :a' (a := a) INTO :r DO SUSPEND; END",
    )
    .unwrap();
    for part in [
        // The text's :A is the parameter, not the routine's variable A.
        "UPDATE \"t\" SET \"a\" = (fb_local.\"k\" * 2) WHERE \"id\" = (7);",
        "FOR fb_row_1 IN SELECT count(*) AS \"fb_1\" FROM \"t\" WHERE \"a\" > (fb_local.\"k\") LOOP",
        "FOR fb_row_2 IN SELECT \"id\" AS \"fb_1\" FROM \"t\" WHERE \"a\" = (fb_local.\"a\") LOOP",
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
    for (body, construct) in [
        (
            "BEGIN EXECUTE STATEMENT 'DELETE FROM t WHERE id = :x'; END",
            ":X",
        ),
        (
            "BEGIN EXECUTE STATEMENT 'DELETE FROM t' WITH AUTONOMOUS TRANSACTION; END",
            "EXECUTE STATEMENT ... WITH AUTONOMOUS TRANSACTION",
        ),
        (
            "BEGIN EXECUTE STATEMENT 'DELETE FROM t' ON EXTERNAL 'other.fdb'; END",
            "EXECUTE STATEMENT ... ON EXTERNAL / AS USER",
        ),
    ] {
        assert_eq!(
            routine("", body).unwrap_err().construct,
            construct,
            "{body}"
        );
    }
}

#[test]
fn autonomous_transactions_are_reported_with_why() {
    let u = routine(
        "",
        "BEGIN\n  IN AUTONOMOUS TRANSACTION DO\n    INSERT INTO t (id) VALUES (1);\nEND",
    )
    .unwrap_err();
    assert_eq!(
        (u.construct.as_str(), u.line),
        ("IN AUTONOMOUS TRANSACTION", 2)
    );
    assert!(
        u.reason
            .starts_with("PostgreSQL has no autonomous transactions"),
        "{u}"
    );
}

#[test]
fn context_variables_uuids_and_overlay() {
    for (source, target) in [
        (
            "RDB$GET_CONTEXT('USER_SESSION', 'APP_USER')",
            "CAST(substr(nullif(current_setting('fb_user_session.v' || md5(CAST('APP_USER' AS text)), true), ''), 2) AS varchar(255))",
        ),
        (
            "RDB$SET_CONTEXT('USER_TRANSACTION', 'K', a)",
            r#"(CASE WHEN nullif(current_setting('fb_user_transaction.v' || md5(CAST('K' AS text)), true), '') IS NULL THEN 0 ELSE 1 END + 0 * length(set_config('fb_user_transaction.v' || md5(CAST('K' AS text)), '=' || CAST("a" AS text), true)))"#,
        ),
        (
            "RDB$GET_CONTEXT('SYSTEM', 'DB_NAME')",
            "CAST(current_database() AS varchar(255))",
        ),
        (
            "UUID_TO_CHAR(GEN_UUID())",
            "upper(CAST(CAST(encode(decode(replace(CAST(gen_random_uuid() AS text), '-', ''), 'hex'), 'hex') AS uuid) AS text))",
        ),
        (
            "CHAR_TO_UUID(a)",
            r#"decode(replace(CAST("a" AS text), '-', ''), 'hex')"#,
        ),
        (
            "OVERLAY(a PLACING 'xy' FROM 2 FOR 3)",
            r#"OVERLAY("a" PLACING 'xy' FROM 2 FOR 3)"#,
        ),
        ("OVERLAY(a PLACING b FROM 2)", r#"OVERLAY("a" PLACING "b" FROM 2)"#),
        ("BIN_OR(a, 3, 8)", r#"(("a") | (3) | (8))"#),
        ("t.a[1] || m[i, 2]", r#""t"."a"[1] || "m"["i"][2]"#),
        ("a = ' '", r#"rtrim(CAST("a" AS text)) = ''"#),
        (
            "FIRST_DAY(OF MONTH FROM CURRENT_DATE)",
            "CAST(date_trunc('month', CURRENT_DATE) AS date)",
        ),
        (
            "LAST_DAY(OF QUARTER FROM CAST(a AS TIMESTAMP))",
            r#"(date_trunc('quarter', CAST("a" AS timestamp)) + INTERVAL '3 month' - INTERVAL '1 day' + CAST(CAST("a" AS timestamp) AS time))"#,
        ),
        (
            "FIRST_DAY(OF WEEK FROM DATE '2024-02-17')",
            "(CAST('2024-02-17' AS date) + -CAST(EXTRACT(DOW FROM CAST('2024-02-17' AS date)) AS integer))",
        ),
        ("'x  ' <> a || b", r#"rtrim(CAST("a" || "b" AS text)) <> 'x'"#),
        ("BIN_SHR(a, 2) + BIN_NOT(5)", r#"(("a") >> (2)) + (~(5))"#),
        (
            "POSITION('a', b, 3)",
            r#"(CASE WHEN strpos(substr("b", 3), 'a') = 0 THEN 0 ELSE strpos(substr("b", 3), 'a') + 3 - 1 END)"#,
        ),
    ] {
        assert_eq!(expr(source), target, "{source}");
    }
    for (source, construct) in [
        (
            "RDB$GET_CONTEXT('SYSTEM', 'ENGINE_VERSION')",
            "RDB$GET_CONTEXT('SYSTEM', 'ENGINE_VERSION')",
        ),
        ("RDB$GET_CONTEXT(a, 'X')", "RDB$GET_CONTEXT"),
        (
            "RDB$SET_CONTEXT('DDL_TRIGGER', 'X', 1)",
            "RDB$SET_CONTEXT('DDL_TRIGGER')",
        ),
    ] {
        assert_eq!(refused(source).construct, construct, "{source}");
    }
    assert_eq!(
        translate_computed(
            "(RDB$GET_CONTEXT('USER_SESSION', 'X'))",
            &ExprContext::new()
        )
        .unwrap_err()
        .construct,
        "RDB$GET_CONTEXT"
    );
}

#[test]
fn returning_into() {
    let out = routine(
        "(v INTEGER) RETURNS (r INTEGER, s INTEGER)",
        "BEGIN INSERT INTO t (a) VALUES (:v) RETURNING id INTO :r; \
         UPDATE t SET a = a + 1 WHERE id = :v RETURNING a, b INTO :r, :s; END",
    )
    .unwrap();
    for part in [
        "  INSERT INTO \"t\" (\"a\") VALUES (fb_local.\"v\") RETURNING \"id\" AS \"fb_1\" INTO fb_row_1;\n  IF FOUND THEN\n    \"p\".\"r\" := CAST(fb_row_1.\"fb_1\" AS integer);\n  END IF;\n",
        "  UPDATE \"t\" SET \"a\" = \"a\" + 1 WHERE \"id\" = fb_local.\"v\" RETURNING \"a\" AS \"fb_1\", \"b\" AS \"fb_2\" INTO fb_row_2;\n  IF FOUND THEN\n",
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
    let upsert = routine(
        "(v INTEGER) RETURNS (r INTEGER)",
        "BEGIN UPDATE OR INSERT INTO t (id, a) VALUES (:v, 1) RETURNING a INTO :r; END",
    )
    .unwrap();
    assert!(
        upsert.contains("RETURNING \"a\" AS \"fb_1\" INTO fb_row_1;\n  IF NOT FOUND THEN\n    INSERT INTO \"t\" (\"id\", \"a\") VALUES (fb_local.\"v\", 1) RETURNING \"a\" AS \"fb_1\" INTO fb_row_1;\n  END IF;\n  IF FOUND THEN"),
        "{upsert}"
    );
    for (body, construct) in [
        (
            "BEGIN UPDATE t SET a = 1 RETURNING OLD.a INTO :r; END",
            "RETURNING OLD./NEW.",
        ),
        ("BEGIN DELETE FROM t RETURNING a, b INTO :r; END", "INTO"),
    ] {
        assert_eq!(
            routine("RETURNS (r INTEGER)", body).unwrap_err().construct,
            construct,
            "{body}"
        );
    }
}

#[test]
fn calls_convert_arguments_to_the_parameters_types() {
    assert_eq!(
        routine_input_types(
            "CREATE PROCEDURE show_langs (code VARCHAR(5), grade SMALLINT, cty CHAR(15), \
             n NUMERIC(9,2), d SOME_DOMAIN) RETURNS (x INTEGER) AS BEGIN END"
        )
        .unwrap(),
        [
            Some("varchar".to_string()),
            Some("integer".into()),
            Some("bpchar".into()),
            Some("numeric".into()),
            None
        ]
    );
    let ctx = ExprContext::new().with_routine_inputs(|name| {
        (name == "SHOW_LANGS").then(|| vec![Some("varchar".into()), Some("integer".into())])
    });
    let ddl = "CREATE PROCEDURE all_langs RETURNS (lang VARCHAR(15)) AS \
               DECLARE grade VARCHAR(5); BEGIN \
               FOR SELECT languages FROM show_langs ('Eng', :grade) INTO :lang DO SUSPEND; \
               EXECUTE PROCEDURE show_langs 'x', :grade; END";
    let out = translate_procedure(ddl, &ctx).unwrap()[0].clone();
    for part in [
        r#"FROM "show_langs"(CAST('Eng' AS varchar), CAST(fb_local."grade" AS integer))"#,
        r#"PERFORM * FROM "show_langs"(CAST('x' AS varchar), CAST(fb_local."grade" AS integer));"#,
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
}

#[test]
fn hostile_text_in_parameters_and_context_names_stays_data() {
    // A parameter's value is an expression in place of `:v`, never text
    // pasted into the statement; a context variable's name only reaches
    // md5(); a message argument is concatenated, not formatted.
    let out = routine(
        "(v VARCHAR(40))",
        "DECLARE n INTEGER; BEGIN \
         EXECUTE STATEMENT ('UPDATE t SET a = :v WHERE id = 1') (v := 'x''; DROP TABLE t; --$fb$'); \
         n = RDB$SET_CONTEXT('USER_SESSION', 'k''); DROP TABLE t; --', :v); \
         EXCEPTION too_big USING ('@2 $fb$ '''); END",
    )
    .unwrap();
    for part in [
        "UPDATE \"t\" SET \"a\" = ('x''; DROP TABLE t; --$fb$') WHERE \"id\" = 1;",
        "md5(CAST('k''); DROP TABLE t; --' AS text))",
        "MESSAGE = 'Order ' || coalesce(CAST('@2 $fb$ ''' AS text), '*** null ***') || ' too big (@2)",
        "$fb1$\n",
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
}

#[test]
fn date_arithmetic_on_variables_is_firebirds() {
    let out = routine(
        "(d DATE) RETURNS (t TIMESTAMP, n NUMERIC(18,4))",
        "DECLARE u TIMESTAMP; BEGIN t = d; t = t + 1; u = :t - 0.5; \
         n = t - u; t = LAST_DAY(OF MONTH FROM t); END",
    )
    .unwrap();
    for part in [
        r#""p"."t" := CAST("p"."t" + 1 * INTERVAL '1 day' AS timestamp);"#,
        r#"fb_local."u" := "p"."t" - 0.5 * INTERVAL '1 day';"#,
        r#""p"."n" := CAST((EXTRACT(EPOCH FROM "p"."t" - fb_local."u") / 86400) AS numeric(18,4));"#,
        r#"(date_trunc('month', "p"."t") + INTERVAL '1 month' - INTERVAL '1 day' + CAST("p"."t" AS time))"#,
    ] {
        assert!(out.contains(part), "{part}\n{out}");
    }
}
