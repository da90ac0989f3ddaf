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
        ("a[1]", "an array element", 1),
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
    (name == "REASSIGN_SALES").then(|| Exception {
        message: "Reassign the sales records before deleting this employee.".into(),
        sqlstate: "FB002".into(),
    })
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
        ("EXECUTE STATEMENT 'DELETE FROM t';", "DELETE FROM \"t\";"),
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
            "FOR SELECT a FROM t INTO :r AS CURSOR c DO SUSPEND;",
            "AS CURSOR",
            "cursors are not translated",
        ),
        (
            "MERGE INTO t USING u ON 1=1 WHEN MATCHED THEN DELETE;",
            "MERGE",
            "not translated",
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
    assert_eq!((u.construct.as_str(), u.line), ("OPEN", 4));
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
