//! The application runs on the copy (issue #50): Firebird's own EMPLOYEE
//! example, with its triggers, CHECKs, view, computed columns and
//! procedures as written, loaded into PostgreSQL; then the same
//! application statements run on both engines and their outcomes are
//! compared: keys from generators, CHECK and foreign key violations,
//! a trigger's side effect, the view's rows, selectable procedures' rows,
//! user exceptions. Behaviour, not text: the text is pinned by
//! fbunload-psql's unit tests. Skipped, saying so, without
//! `FBUNLOAD_TEST_PG_URI` or Debian's EMPLOYEE script.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use fbunload_client::TransactionMode;

type Rows = Vec<Vec<Option<String>>>;

/// The two engines, each with its application connection.
struct Both {
    db: PathBuf,
    pg: postgres::Client,
}

/// What a statement did: its rows, or that it was refused (with the
/// engine's message).
#[derive(Debug)]
enum Outcome {
    Rows(Rows),
    Refused(String),
}

impl Both {
    /// A query whose every column Firebird gives as text (the caller
    /// CASTs), in a transaction of its own that commits.
    fn firebird(&self, sql: &str) -> Outcome {
        let att = connect(&self.db);
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        let rows = (|| {
            let mut stmt = tr.prepare(sql)?;
            stmt.execute()?;
            let n = stmt.columns().len();
            let mut rows = Vec::new();
            while n > 0 && stmt.fetch()? {
                let row = stmt.row();
                rows.push(
                    (0..n)
                        .map(|i| {
                            row.value(i)
                                .map(|v| String::from_utf8_lossy(v).trim_end().to_string())
                        })
                        .collect(),
                );
            }
            Ok::<_, fbunload_client::ClientError>(rows)
        })();
        match rows {
            Ok(rows) => {
                tr.commit().unwrap();
                Outcome::Rows(rows)
            }
            Err(e) => Outcome::Refused(e.to_string()),
        }
    }

    /// The same in PostgreSQL (the caller casts to text), committed.
    fn postgres(&mut self, sql: &str) -> Outcome {
        match self.pg.query(sql, &[]) {
            Ok(rows) => Outcome::Rows(
                rows.iter()
                    .map(|r| {
                        (0..r.len())
                            .map(|i| {
                                r.get::<_, Option<String>>(i)
                                    .map(|s| s.trim_end().to_string())
                            })
                            .collect()
                    })
                    .collect(),
            ),
            Err(e) => Outcome::Refused(match e.as_db_error() {
                Some(db) => format!("{} ({})", db.message(), db.code().code()),
                None => e.to_string(),
            }),
        }
    }

    /// Both give the same rows.
    fn same_rows(&mut self, what: &str, firebird: &str, postgres: &str) -> Rows {
        let (f, p) = (self.firebird(firebird), self.postgres(postgres));
        match (f, p) {
            (Outcome::Rows(f), Outcome::Rows(p)) => {
                assert_eq!(f, p, "{what}: Firebird's rows, then PostgreSQL's");
                f
            }
            (f, p) => panic!("{what}: Firebird {f:?}, PostgreSQL {p:?}"),
        }
    }

    /// Both do it (whatever rows they give).
    fn both_succeed(&mut self, what: &str, firebird: &str, postgres: &str) {
        let (f, p) = (self.firebird(firebird), self.postgres(postgres));
        assert!(
            matches!((&f, &p), (Outcome::Rows(_), Outcome::Rows(_))),
            "{what}: Firebird {f:?}, PostgreSQL {p:?}"
        );
    }

    /// Both refuse; each message holds `says` where given.
    fn both_refuse(&mut self, what: &str, firebird: &str, postgres: &str, says: Option<&str>) {
        let (f, p) = (self.firebird(firebird), self.postgres(postgres));
        match (&f, &p) {
            (Outcome::Refused(f), Outcome::Refused(p)) => {
                if let Some(says) = says {
                    assert!(f.contains(says), "{what}: Firebird said {f}");
                    assert!(p.contains(says), "{what}: PostgreSQL said {p}");
                }
            }
            _ => panic!("{what}: not refused by both: Firebird {f:?}, PostgreSQL {p:?}"),
        }
    }
}

fn load(db: &Path, uri: &str, args: &[&str]) {
    let mut all = vec!["-o", uri, "--pg-schema", "emp", "-j", "2"];
    all.extend_from_slice(args);
    let out = fbunload(db, &all);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn employee_application_statements_behave_the_same_on_the_postgresql_copy() {
    let Some(uri) = pg_database("fbu_translate") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = employee(dir.path()) else {
        return;
    };
    load(&db, &uri, &["--keep-keys"]);
    let mut pg = postgres::Client::connect(&uri, postgres::NoTls).unwrap();
    pg.batch_execute("SET search_path TO emp").unwrap();
    let mut both = Both { db: db.clone(), pg };

    // What did not translate says why, with the line it stopped at.
    let reported = both.postgres(
        "SELECT kind || ' ' || name || ': ' || why FROM _fbunload_untranslated \
         WHERE kind IN ('trigger', 'view', 'procedure', 'check constraint', 'computed column') \
         ORDER BY 1",
    );
    let Outcome::Rows(reported) = reported else {
        panic!("{reported:?}")
    };
    let reported: Vec<String> = reported
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    // EMPLOYEE's salary CHECK reads JOB (PostgreSQL's CHECK reads its
    // row only).
    assert!(
        reported.iter().any(|r| r.starts_with("check constraint ")
            && r.contains("cannot use subquery in check constraint")),
        "{reported:#?}"
    );
    for made in [
        "view PHONE_LIST",
        "trigger ",
        "computed column ",
        "procedure ",
    ] {
        assert!(
            !reported.iter().any(|r| r.starts_with(made)),
            "{made} reported: {reported:#?}"
        );
    }

    // A sync applies the rows Firebird's trigger wrote, without firing
    // PostgreSQL's copy of the trigger again.
    execute(
        &db,
        &["UPDATE EMPLOYEE SET SALARY = 107800 WHERE EMP_NO = 2"],
    );
    load(&db, &uri, &[]);
    let history = "SELECT CAST(EMP_NO AS VARCHAR(10)), CAST(OLD_SALARY AS VARCHAR(20)), \
                   CAST(PERCENT_CHANGE AS NUMERIC(9,2)) || '', CAST(NEW_SALARY AS NUMERIC(12,2)) || '' \
                   FROM SALARY_HISTORY ORDER BY EMP_NO, CHANGE_DATE";
    let pg_history = "SELECT emp_no::text, old_salary::text, percent_change::numeric(9,2)::text, \
                      new_salary::numeric(12,2)::text FROM salary_history \
                      ORDER BY salary_history.emp_no, change_date";
    let rows = both.same_rows("SALARY_HISTORY after a sync", history, pg_history);
    assert!(
        rows.contains(&vec![
            Some("2".into()),
            Some("105900.00".into()),
            Some("1.79".into()),
            Some("107799.95".into())
        ]),
        "{rows:?}"
    );

    // An insert without its key gets the generator's next value on both.
    both.same_rows(
        "insert without EMP_NO",
        "INSERT INTO EMPLOYEE (FIRST_NAME, LAST_NAME, DEPT_NO, JOB_CODE, JOB_GRADE, \
         JOB_COUNTRY, SALARY) VALUES ('Ada', 'Lovelace', '600', 'VP', 2, 'USA', 100000)",
        "INSERT INTO employee (first_name, last_name, dept_no, job_code, job_grade, \
         job_country, salary) VALUES ('Ada', 'Lovelace', '600', 'VP', 2, 'USA', 100000)",
    );
    let key = both.same_rows(
        "the generated key",
        "SELECT CAST(EMP_NO AS VARCHAR(10)), FULL_NAME FROM EMPLOYEE WHERE LAST_NAME = 'Lovelace'",
        "SELECT emp_no::text, full_name FROM employee WHERE last_name = 'Lovelace'",
    );
    assert_eq!(key.len(), 1, "{key:?}");
    assert_eq!(key[0][1].as_deref(), Some("Lovelace, Ada"));
    // An explicit NULL key too (the trigger, not only the default).
    both.same_rows(
        "insert with a NULL CUST_NO",
        "INSERT INTO CUSTOMER (CUST_NO, CUSTOMER, COUNTRY) VALUES (NULL, 'Analytical Engines', 'England')",
        "INSERT INTO customer (cust_no, customer, country) VALUES (NULL, 'Analytical Engines', 'England')",
    );
    both.same_rows(
        "the generated customer key",
        "SELECT CAST(CUST_NO AS VARCHAR(10)) FROM CUSTOMER WHERE CUSTOMER = 'Analytical Engines'",
        "SELECT cust_no::text FROM customer WHERE customer = 'Analytical Engines'",
    );

    // CHECK constraints of the tables, and a foreign key.
    for (what, firebird, postgres) in [
        (
            "a bad order status",
            "UPDATE SALES SET ORDER_STATUS = 'bogus' WHERE PO_NUMBER = 'V92E0340'",
            "UPDATE sales SET order_status = 'bogus' WHERE po_number = 'V92E0340'",
        ),
        (
            "a percent change beyond 50",
            "UPDATE SALARY_HISTORY SET PERCENT_CHANGE = 75 WHERE EMP_NO = 2",
            "UPDATE salary_history SET percent_change = 75 WHERE emp_no = 2",
        ),
        (
            "shipped without a ship date",
            "UPDATE SALES SET ORDER_STATUS = 'shipped', SHIP_DATE = NULL WHERE PO_NUMBER = 'V92E0340'",
            "UPDATE sales SET order_status = 'shipped', ship_date = NULL WHERE po_number = 'V92E0340'",
        ),
        (
            "a paid flag not y or n",
            "UPDATE SALES SET PAID = 'x' WHERE PO_NUMBER = 'V92E0340'",
            "UPDATE sales SET paid = 'x' WHERE po_number = 'V92E0340'",
        ),
        (
            "a department that is not there",
            "UPDATE EMPLOYEE SET DEPT_NO = '999' WHERE EMP_NO = 4",
            "UPDATE employee SET dept_no = '999' WHERE emp_no = 4",
        ),
    ] {
        both.both_refuse(what, firebird, postgres, None);
    }
    // A domain's CHECK (SALARY > 0, CUSTNO > 1000): the domain is made with
    // its CHECK translated, so it holds on both.
    both.both_refuse(
        "salary -5",
        "UPDATE EMPLOYEE SET SALARY = -5 WHERE EMP_NO = 4",
        "UPDATE employee SET salary = -5 WHERE emp_no = 4",
        None,
    );
    both.both_refuse(
        "customer number 5",
        "INSERT INTO CUSTOMER (CUST_NO, CUSTOMER) VALUES (5, 'x')",
        "INSERT INTO customer (cust_no, customer) VALUES (5, 'x')",
        None,
    );

    // A salary update writes a SALARY_HISTORY row on both (the AFTER
    // UPDATE trigger), with its computed NEW_SALARY.
    let emp_history = (
        "SELECT CAST(OLD_SALARY AS VARCHAR(20)), CAST(PERCENT_CHANGE AS NUMERIC(9,2)) || '', \
         CAST(NEW_SALARY AS NUMERIC(12,2)) || '' FROM SALARY_HISTORY WHERE EMP_NO = 4 \
         ORDER BY CHANGE_DATE",
        "SELECT old_salary::text, percent_change::numeric(9,2)::text, \
         new_salary::numeric(12,2)::text FROM salary_history WHERE emp_no = 4 \
         ORDER BY change_date",
    );
    let before = both.same_rows("SALARY_HISTORY of 4", emp_history.0, emp_history.1);
    both.same_rows(
        "a salary update",
        "UPDATE EMPLOYEE SET SALARY = SALARY + SALARY / 10 WHERE EMP_NO = 4",
        "UPDATE employee SET salary = salary + salary / 10 WHERE emp_no = 4",
    );
    let after = both.same_rows(
        "SALARY_HISTORY of 4 after an update",
        emp_history.0,
        emp_history.1,
    );
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert_eq!(after.last().unwrap()[1].as_deref(), Some("10.00"));

    // The view.
    let phones = both.same_rows(
        "PHONE_LIST",
        "SELECT CAST(EMP_NO AS VARCHAR(10)), FIRST_NAME, LAST_NAME, PHONE_EXT, LOCATION, PHONE_NO \
         FROM PHONE_LIST ORDER BY EMP_NO",
        "SELECT emp_no::text, first_name, last_name, phone_ext, location, phone_no \
         FROM phone_list ORDER BY phone_list.emp_no",
    );
    assert!(phones.len() > 40, "{}", phones.len());

    // Selectable procedures, each for a set of inputs.
    let org = both.same_rows(
        "ORG_CHART",
        "SELECT HEAD_DEPT, DEPARTMENT, MNGR_NAME, TITLE, CAST(EMP_CNT AS VARCHAR(10)) FROM ORG_CHART",
        "SELECT head_dept, department, mngr_name, title, emp_cnt::text FROM org_chart()",
    );
    assert!(org.len() > 10, "{}", org.len());
    for dept in ["000", "100", "600", "621", "999"] {
        both.same_rows(
            &format!("DEPT_BUDGET('{dept}')"),
            &format!("SELECT CAST(TOT AS VARCHAR(20)) FROM DEPT_BUDGET('{dept}')"),
            &format!("SELECT tot::text FROM dept_budget('{dept}')"),
        );
        both.same_rows(
            &format!("SUB_TOT_BUDGET('{dept}')"),
            &format!(
                "SELECT CAST(TOT_BUDGET AS VARCHAR(20)), CAST(MIN_BUDGET AS VARCHAR(20)), \
                 CAST(MAX_BUDGET AS VARCHAR(20)) FROM SUB_TOT_BUDGET('{dept}')"
            ),
            &format!(
                "SELECT tot_budget::text, min_budget::text, max_budget::text \
                 FROM sub_tot_budget('{dept}')"
            ),
        );
    }
    // An argument longer than the parameter's CHAR(3) is refused by both.
    both.both_refuse(
        "DEPT_BUDGET('none')",
        "SELECT CAST(TOT AS VARCHAR(20)) FROM DEPT_BUDGET('none')",
        "SELECT tot::text FROM dept_budget('none')",
        None,
    );
    for emp in [2, 4, 71, 999] {
        both.same_rows(
            &format!("GET_EMP_PROJ({emp})"),
            &format!("SELECT PROJ_ID FROM GET_EMP_PROJ({emp})"),
            &format!("SELECT proj_id FROM get_emp_proj({emp})"),
        );
    }
    // SHOW_LANGS reads an array column's elements (loaded with their
    // bounds); ALL_LANGS selects from it for every job.
    for (code, grade, country) in [
        ("Eng", 3, "USA"),
        ("Sales", 3, "England"),
        ("CEO", 1, "USA"),
    ] {
        both.same_rows(
            &format!("SHOW_LANGS('{code}', {grade}, '{country}')"),
            &format!("SELECT LANGUAGES FROM SHOW_LANGS('{code}', {grade}, '{country}')"),
            &format!("SELECT languages FROM show_langs('{code}', {grade}, '{country}')"),
        );
    }
    let langs = both.same_rows(
        "ALL_LANGS",
        "SELECT CODE, GRADE, COUNTRY, LANG FROM ALL_LANGS ORDER BY 1, 2, 3, 4",
        "SELECT code, grade, country, lang FROM all_langs() ORDER BY 1, 2, 3, 4",
    );
    assert!(langs.len() > 20, "{langs:?}");
    for customer in [1001, 1004, 1010, 9999] {
        both.same_rows(
            &format!("MAIL_LABEL({customer})"),
            &format!("SELECT LINE1, LINE2, LINE3, LINE4, LINE5, LINE6 FROM MAIL_LABEL({customer})"),
            &format!("SELECT line1, line2, line3, line4, line5, line6 FROM mail_label({customer})"),
        );
    }

    // User exceptions, raised with their message on both.
    both.both_refuse(
        "SHIP_ORDER of a shipped order",
        "EXECUTE PROCEDURE SHIP_ORDER 'V91E0210'",
        "SELECT ship_order('V91E0210')",
        Some("Order status is \"shipped.\""),
    );
    both.both_refuse(
        "DELETE_EMPLOYEE of a sales representative",
        "EXECUTE PROCEDURE DELETE_EMPLOYEE 11",
        "SELECT delete_employee(11)",
        Some("Reassign the sales records before deleting this employee."),
    );
    // A WHEN SQLCODE -530 (foreign key) handler that raises its own.
    both.both_refuse(
        "ADD_EMP_PROJ of an unknown employee",
        "EXECUTE PROCEDURE ADD_EMP_PROJ 999, 'VBASE'",
        "SELECT add_emp_proj(999, 'VBASE')",
        Some("Invalid employee number or project id."),
    );
    let ada = key[0][0].clone().unwrap();
    both.both_succeed(
        "ADD_EMP_PROJ of a known one",
        &format!("EXECUTE PROCEDURE ADD_EMP_PROJ {ada}, 'VBASE'"),
        &format!("SELECT FROM add_emp_proj({ada}, 'VBASE')"),
    );
    both.same_rows(
        "EMPLOYEE_PROJECT after ADD_EMP_PROJ",
        "SELECT CAST(EMP_NO AS VARCHAR(10)), PROJ_ID FROM EMPLOYEE_PROJECT ORDER BY 1, 2",
        "SELECT emp_no::text, proj_id FROM employee_project ORDER BY 1, 2",
    );
}

/// A database of our own with what EMPLOYEE lacks: multi-event triggers
/// in position order, an inactive one, a trigger that raises, a CHECK
/// with CONTAINING, identity and generator keys, a computed column,
/// views with FIRST, IIF, DATEDIFF, EXTRACT, window functions, a CTE,
/// LIST and a quoted name, procedures with WHILE/CONTINUE/LEAVE,
/// ROW_COUNT and a WHEN ANY handler, a PSQL function, and a string
/// that holds `$fb$`, quotes and a statement (hostile to a translator
/// that pastes text).
fn richer(dir: &Path) -> PathBuf {
    let db = create_db(dir, "richer.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE SEQUENCE ITEM_IDS",
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR(40) NOT NULL, \
             PRICE NUMERIC(9,2), QTY INTEGER DEFAULT 0, MADE DATE, CATEGORY VARCHAR(10), \
             TOTAL COMPUTED BY (PRICE * QTY), \
             CHECK (PRICE >= 0), CHECK (CATEGORY IN ('tool', 'toy', 'food') OR CATEGORY IS NULL), \
             CHECK (NAME NOT CONTAINING 'forbidden'))",
            "CREATE TABLE AUDIT (N INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, \
             ITEM_ID INTEGER, OP VARCHAR(10), NOTE VARCHAR(100))",
            "CREATE EXCEPTION TOO_MANY 'Too many items: the limit is 1000'",
            "CREATE TRIGGER ITEMS_KEY FOR ITEMS ACTIVE BEFORE INSERT POSITION 0 AS \
             BEGIN IF (NEW.ID IS NULL) THEN NEW.ID = NEXT VALUE FOR ITEM_IDS; END",
            "CREATE TRIGGER ITEMS_AUDIT FOR ITEMS ACTIVE AFTER INSERT OR UPDATE OR DELETE \
             POSITION 10 AS BEGIN \
             IF (INSERTING) THEN INSERT INTO AUDIT (ITEM_ID, OP, NOTE) VALUES (NEW.ID, 'insert', 'first'); \
             ELSE IF (UPDATING) THEN INSERT INTO AUDIT (ITEM_ID, OP, NOTE) VALUES (NEW.ID, 'update', 'first'); \
             ELSE INSERT INTO AUDIT (ITEM_ID, OP, NOTE) VALUES (OLD.ID, 'delete', 'first'); END",
            "CREATE TRIGGER ITEMS_AUDIT_LATER FOR ITEMS ACTIVE AFTER INSERT POSITION 20 AS \
             BEGIN INSERT INTO AUDIT (ITEM_ID, OP, NOTE) VALUES (NEW.ID, 'insert', 'second'); END",
            "CREATE TRIGGER ITEMS_TIDY FOR ITEMS ACTIVE BEFORE INSERT OR UPDATE POSITION 5 AS \
             BEGIN NEW.NAME = TRIM(NEW.NAME); IF (NEW.QTY > 1000) THEN EXCEPTION TOO_MANY; END",
            "CREATE TRIGGER ITEMS_NEVER FOR ITEMS INACTIVE BEFORE INSERT POSITION 1 AS \
             BEGIN NEW.NAME = 'never'; END",
            "CREATE FUNCTION DISCOUNTED (P NUMERIC(9,2), PCT INTEGER) RETURNS NUMERIC(9,2) AS \
             BEGIN RETURN P - P * PCT / 100; END",
            "CREATE VIEW CHEAP (ID, NAME, PRICE_TEXT, DAYS_TO_2030, MONTH_MADE, RANKED, SALE) AS \
             SELECT FIRST 3 ID, NAME, IIF(PRICE < 10, 'cheap', 'dear') || ':' || CAST(PRICE AS VARCHAR(12)), \
             DATEDIFF(DAY, MADE, DATE '2030-01-01'), EXTRACT(MONTH FROM MADE), \
             ROW_NUMBER() OVER (PARTITION BY CATEGORY ORDER BY PRICE DESC), DISCOUNTED(PRICE, 10) \
             FROM ITEMS WHERE PRICE IS NOT NULL ORDER BY PRICE, ID",
            "CREATE VIEW BY_CATEGORY AS WITH C AS (SELECT CATEGORY, COUNT(*) N, \
             CHAR_LENGTH(LIST(NAME, ';')) L FROM (SELECT * FROM ITEMS) GROUP BY CATEGORY) \
             SELECT COALESCE(CATEGORY, '-') AS CATEGORY, N, L FROM C",
            "CREATE VIEW QUOTED (\"It\"\"s id\") AS SELECT ID FROM ITEMS WHERE NAME STARTING WITH 'h'",
            // Reads CHEAP, and comes before it by name: made once CHEAP is.
            "CREATE VIEW A_TOP AS SELECT FIRST 1 NAME, SALE FROM CHEAP ORDER BY SALE DESC",
            "CREATE PROCEDURE \"Odd\"\"Name\" (X INTEGER) RETURNS (Y INTEGER) AS \
             BEGIN Y = X + 1; SUSPEND; END",
            "CREATE PROCEDURE RESTOCK (MIN_QTY INTEGER, ADD_QTY INTEGER) RETURNS (CHANGED INTEGER) AS \
             DECLARE VARIABLE I INTEGER; \
             BEGIN CHANGED = 0; \
             FOR SELECT ID FROM ITEMS WHERE QTY < :MIN_QTY ORDER BY ID INTO :I DO \
             BEGIN UPDATE ITEMS SET QTY = QTY + :ADD_QTY WHERE ID = :I; CHANGED = CHANGED + ROW_COUNT; END \
             SUSPEND; END",
            "CREATE PROCEDURE SERIES (N INTEGER) RETURNS (K INTEGER, SQ BIGINT, WORD VARCHAR(60)) AS \
             BEGIN K = 0; \
             WHILE (K < N) DO BEGIN \
               K = K + 1; \
               IF (K = 4) THEN CONTINUE; \
               IF (K > 6) THEN LEAVE; \
               SQ = K * K; \
               WORD = CASE MOD(K, 2) WHEN 0 THEN 'even' ELSE 'odd' END || ' $fb$ \\t ''; DROP TABLE ITEMS; --'; \
               SUSPEND; \
             END END",
            "CREATE PROCEDURE SPLIT_PRICE (P NUMERIC(9,2)) RETURNS (WHOLE INTEGER, CENTS INTEGER) AS \
             BEGIN WHOLE = TRUNC(P); CENTS = (P - TRUNC(P)) * 100; END",
            "CREATE PROCEDURE PRICES RETURNS (NAME VARCHAR(40), WHOLE INTEGER, CENTS INTEGER) AS \
             DECLARE VARIABLE P NUMERIC(9,2); \
             BEGIN FOR SELECT NAME, PRICE FROM ITEMS WHERE PRICE IS NOT NULL ORDER BY ID \
             INTO :NAME, :P DO BEGIN \
             EXECUTE PROCEDURE SPLIT_PRICE :P RETURNING_VALUES :WHOLE, :CENTS; SUSPEND; END END",
            "CREATE PROCEDURE SAFE_DIVIDE (A INTEGER, B INTEGER) RETURNS (Q INTEGER, MSG VARCHAR(40)) AS \
             BEGIN \
               BEGIN Q = A / B; MSG = 'ok'; \
               WHEN ANY DO BEGIN Q = NULL; MSG = 'failed: ' || SQLSTATE; END END \
               SUSPEND; \
             END",
            // Cursors, UPDATE OR INSERT, MERGE, EXECUTE STATEMENT with
            // parameters, context variables (issue #50 item 6, the rest).
            "CREATE TABLE PRICE_CHANGES (NAME VARCHAR(40) NOT NULL PRIMARY KEY, PRICE NUMERIC(9,2))",
            "CREATE PROCEDURE NAMES_FROM (MIN_ID INTEGER) RETURNS (NAME VARCHAR(40), N INTEGER) AS \
             DECLARE C CURSOR FOR (SELECT NAME FROM ITEMS WHERE ID >= :MIN_ID ORDER BY ID); \
             BEGIN N = 0; OPEN C; \
             WHILE (1 = 1) DO BEGIN \
               FETCH C INTO :NAME; IF (ROW_COUNT = 0) THEN LEAVE; N = N + 1; SUSPEND; \
             END CLOSE C; \
             NAME = 'kept: ' || NAME; SUSPEND; END",
            "CREATE PROCEDURE MARK_DOWN (PCT INTEGER) RETURNS (CHANGED INTEGER, DROPPED INTEGER) AS \
             DECLARE P NUMERIC(9,2); \
             BEGIN CHANGED = 0; DROPPED = 0; \
             FOR SELECT PRICE FROM ITEMS WHERE PRICE IS NOT NULL INTO :P AS CURSOR CUR DO BEGIN \
               IF (P < 2) THEN BEGIN DELETE FROM ITEMS WHERE CURRENT OF CUR; DROPPED = DROPPED + 1; END \
               ELSE BEGIN UPDATE ITEMS SET PRICE = PRICE - PRICE * :PCT / 100 WHERE CURRENT OF CUR; \
               CHANGED = CHANGED + 1; END \
             END SUSPEND; END",
            "CREATE PROCEDURE TAG_TOOLS RETURNS (N INTEGER) AS BEGIN N = 0; \
             FOR SELECT ID, NAME FROM ITEMS WHERE CATEGORY = 'tool' AS CURSOR C DO BEGIN \
               UPDATE ITEMS SET NAME = C.NAME || '#' || :C.ID WHERE CURRENT OF C; N = N + 1; END \
             SUSPEND; END",
            "CREATE PROCEDURE NEW_ITEM (NAME VARCHAR(40)) RETURNS (ID INTEGER, UNCHANGED INTEGER, GONE INTEGER) AS \
             BEGIN UNCHANGED = -7; \
             INSERT INTO ITEMS (NAME, PRICE) VALUES (:NAME, 1.50) RETURNING ID INTO :ID; \
             UPDATE ITEMS SET QTY = QTY + 1 WHERE ID = -1 RETURNING QTY INTO :UNCHANGED; \
             DELETE FROM ITEMS WHERE NAME = 'kite' RETURNING ID INTO :GONE; \
             SUSPEND; END",
            "CREATE PROCEDURE BUMP (ID INTEGER) RETURNS (Q INTEGER, FIRST_FREE INTEGER) AS BEGIN \
             SELECT QTY FROM ITEMS WHERE ID = :ID WITH LOCK INTO :Q; \
             UPDATE ITEMS SET QTY = :Q + 1 WHERE ID = :ID; \
             FOR SELECT FIRST 1 ID FROM ITEMS WHERE ID > :ID ORDER BY ID WITH LOCK SKIP LOCKED \
             INTO :FIRST_FREE DO SUSPEND; END",
            "CREATE PROCEDURE DAYS_LATER (D DATE) RETURNS (T TIMESTAMP, HALF TIMESTAMP, \
             SPAN NUMERIC(18,4), LAST_ TIMESTAMP) AS BEGIN \
             T = D; T = T + 1; HALF = :T - 0.5; SPAN = T - HALF; LAST_ = LAST_DAY(OF MONTH FROM T); \
             SUSPEND; END",
            "CREATE PROCEDURE UPSERT_ITEM (ID INTEGER, NAME VARCHAR(40), PRICE NUMERIC(9,2)) \
             RETURNS (N INTEGER) AS BEGIN \
             UPDATE OR INSERT INTO ITEMS (ID, NAME, PRICE, CATEGORY) VALUES (:ID, :NAME, :PRICE, 'toy'); \
             N = ROW_COUNT; SUSPEND; END",
            "CREATE PROCEDURE UPSERT_BY_NAME (NAME VARCHAR(40), QTY INTEGER) RETURNS (N INTEGER) AS \
             BEGIN UPDATE OR INSERT INTO ITEMS (NAME, QTY) VALUES (:NAME, :QTY) MATCHING (NAME); \
             N = ROW_COUNT; SUSPEND; END",
            "CREATE PROCEDURE APPLY_CHANGES RETURNS (N INTEGER) AS BEGIN \
             MERGE INTO ITEMS I USING (SELECT NAME, PRICE FROM PRICE_CHANGES) C ON I.NAME = C.NAME \
             WHEN MATCHED AND C.PRICE IS NULL THEN DELETE \
             WHEN MATCHED THEN UPDATE SET PRICE = C.PRICE \
             WHEN NOT MATCHED THEN INSERT (NAME, PRICE, QTY, CATEGORY) VALUES (C.NAME, C.PRICE, 1, 'tool'); \
             SELECT COUNT(*) FROM ITEMS INTO :N; SUSPEND; END",
            "CREATE PROCEDURE RENAME_ITEM (OLD_NAME VARCHAR(40), NEW_NAME VARCHAR(40)) RETURNS (N INTEGER) AS \
             DECLARE NAME VARCHAR(40) = 'not this one'; \
             BEGIN \
             EXECUTE STATEMENT ('UPDATE ITEMS SET NAME = :NAME WHERE NAME = :OLDN') (NAME := NEW_NAME, OLDN := OLD_NAME); \
             EXECUTE STATEMENT ('SELECT COUNT(*) FROM ITEMS WHERE NAME = ? OR NAME = ?') (:NEW_NAME, :NAME) INTO :N; \
             SUSPEND; \
             FOR EXECUTE STATEMENT ('SELECT ID FROM ITEMS WHERE NAME = :N ORDER BY ID') (N := NEW_NAME) INTO :N DO SUSPEND; \
             END",
            "CREATE PROCEDURE REMEMBER (V VARCHAR(20)) RETURNS (STEP VARCHAR(10), WAS INTEGER, NOW_ VARCHAR(20)) AS \
             BEGIN \
             STEP = 'unset'; WAS = NULL; NOW_ = RDB$GET_CONTEXT('USER_SESSION', 'NEVER_SET'); SUSPEND; \
             STEP = 'set'; WAS = RDB$SET_CONTEXT('USER_SESSION', 'LAST', V); NOW_ = RDB$GET_CONTEXT('USER_SESSION', 'LAST'); SUSPEND; \
             STEP = 'again'; WAS = RDB$SET_CONTEXT('USER_SESSION', 'LAST', ''); NOW_ = '<' || RDB$GET_CONTEXT('USER_SESSION', 'LAST') || '>'; SUSPEND; \
             STEP = 'null'; WAS = RDB$SET_CONTEXT('USER_SESSION', 'LAST', NULL); NOW_ = RDB$GET_CONTEXT('USER_SESSION', 'LAST'); SUSPEND; \
             STEP = 'tx'; WAS = RDB$SET_CONTEXT('USER_TRANSACTION', 'T', 42); NOW_ = RDB$GET_CONTEXT('USER_TRANSACTION', 'T'); SUSPEND; \
             END",
            "CREATE VIEW ONE_ROW (L, U, O, P, P0, H, M, MS, Q, FW, LQ, LM) AS SELECT CHAR_LENGTH(UUID_TO_CHAR(GEN_UUID())), \
             UUID_TO_CHAR(CHAR_TO_UUID('a0bf4f5a-1234-4000-8000-00000000abcd')), \
             OVERLAY(NAME PLACING 'XY' FROM 2 FOR 3), POSITION('a', NAME, 3), POSITION('x', NAME, 2), \
             DATEDIFF(HOUR, TIMESTAMP '2024-01-01 23:59', TIMESTAMP '2024-01-02 00:01'), \
             DATEDIFF(MINUTE, TIME '10:00:59', TIME '10:01:00'), \
             DATEDIFF(MILLISECOND, TIMESTAMP '2024-01-01 10:00:00.0009', TIMESTAMP '2024-01-01 10:00:00.0011'), \
             EXTRACT(QUARTER FROM MADE), FIRST_DAY(OF WEEK FROM DATE '2024-02-17'), \
             LAST_DAY(OF QUARTER FROM TIMESTAMP '2024-02-17 10:11:12'), \
             LAST_DAY(OF MONTH FROM CAST(MADE AS DATE)) \
             FROM ITEMS WHERE ID = 1",
            "CREATE EXCEPTION OUT_OF_RANGE 'Quantity @1 of @2 is out of range (@3)'",
            "CREATE PROCEDURE CHECK_QTY (Q INTEGER, WHAT VARCHAR(10)) RETURNS (BITS INTEGER) AS BEGIN \
             IF (Q > 100) THEN EXCEPTION OUT_OF_RANGE USING (Q, WHAT); \
             BITS = BIN_OR(BIN_AND(Q, 12), BIN_SHL(1, 4), BIN_XOR(Q, 1)) + BIN_SHR(-16, 2) + BIN_NOT(5); \
             SUSPEND; END",
            "CREATE PROCEDURE CHECKED (A INTEGER, B INTEGER) RETURNS (Q SMALLINT, MSG VARCHAR(20)) AS \
             BEGIN BEGIN Q = A / B; MSG = 'ok'; \
             WHEN SQLCODE -802 DO BEGIN Q = -1; MSG = 'arithmetic'; END END SUSPEND; END",
            // Reported: PostgreSQL has no autonomous transactions.
            "CREATE PROCEDURE LOG_ALWAYS (NOTE VARCHAR(100)) AS BEGIN\n\
             IN AUTONOMOUS TRANSACTION DO\n\
             INSERT INTO AUDIT (OP, NOTE) VALUES ('log', :NOTE);\nEND",
            // A view over two tables: each one's column types known.
            "CREATE TABLE STARTS (ID INTEGER NOT NULL PRIMARY KEY, AT_START TIMESTAMP)",
            "CREATE TABLE ENDS (ID INTEGER NOT NULL PRIMARY KEY, AT_END TIMESTAMP)",
            "CREATE VIEW SPANS (ID, NEXT_START, NEXT_END, DAYS) AS SELECT S.ID, S.AT_START + 1, E.AT_END + 1, \
             E.AT_END - S.AT_START FROM STARTS S JOIN ENDS E ON E.ID = S.ID",
            "INSERT INTO STARTS VALUES (1, '2024-03-01 08:00:00')",
            "INSERT INTO ENDS VALUES (1, '2024-03-03 20:00:00')",
            "INSERT INTO PRICE_CHANGES VALUES ('honey', 8.00)",
            "INSERT INTO PRICE_CHANGES VALUES ('saw', NULL)",
            "INSERT INTO PRICE_CHANGES VALUES ('drill', 55.00)",
            "INSERT INTO ITEMS (NAME, PRICE, QTY, MADE, CATEGORY) VALUES ('hammer', 12.50, 3, '2024-02-10', 'tool')",
            "INSERT INTO ITEMS (NAME, PRICE, QTY, MADE, CATEGORY) VALUES ('ball', 4.25, 0, '2023-11-30', 'toy')",
            "INSERT INTO ITEMS (NAME, PRICE, QTY, MADE, CATEGORY) VALUES ('  honey ', 7.00, 12, '2024-06-01', 'food')",
            // Firebird adds a CHECK without reading the rows it has.
            "INSERT INTO ITEMS (NAME, PRICE, QTY, MADE) VALUES ('crate', 1.00, 500, '2020-01-01')",
            "ALTER TABLE ITEMS ADD CONSTRAINT SMALL_QTY CHECK (QTY < 400)",
        ],
    );
    db
}

#[test]
fn a_richer_database_behaves_the_same_on_the_postgresql_copy() {
    let Some(uri) = pg_database("fbu_translate_rich") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = richer(dir.path());
    load(&db, &uri, &[]);
    let mut pg = postgres::Client::connect(&uri, postgres::NoTls).unwrap();
    pg.batch_execute("SET search_path TO emp").unwrap();
    let mut both = Both { db: db.clone(), pg };
    // (Kinds of the translation's; the catalog walk reports others.)
    let reported = both.postgres(
        "SELECT kind || ' ' || name || ': ' || why FROM _fbunload_untranslated WHERE kind IN \
         ('trigger', 'view', 'procedure', 'function', 'check constraint', 'computed column', \
         'generated key') ORDER BY kind DESC",
    );
    // Everything translates but the autonomous transaction, reported with
    // its line; the CHECK the loaded rows break is made NOT VALID, and
    // said so.
    let Outcome::Rows(reported) = reported else {
        panic!("{reported:?}")
    };
    assert_eq!(reported.len(), 2, "{reported:?}");
    assert_eq!(
        reported[0][0].as_deref(),
        Some(
            "procedure LOG_ALWAYS: not translated: line 2: IN AUTONOMOUS TRANSACTION: \
             PostgreSQL has no autonomous transactions: its writes would commit or roll back \
             with the caller's (dblink to the same database can do it by hand)"
        ),
        "{reported:?}"
    );
    let note = reported[1][0].clone().unwrap();
    assert!(
        note.starts_with("check constraint SMALL_QTY: made NOT VALID: ")
            && note.contains("is violated by some row"),
        "{note}"
    );

    let items = (
        "SELECT CAST(ID AS VARCHAR(10)), NAME, CAST(PRICE AS VARCHAR(20)), CAST(QTY AS VARCHAR(10)), \
         CAST(TOTAL AS VARCHAR(20)), CATEGORY FROM ITEMS ORDER BY ID",
        "SELECT id::text, name, price::text, qty::text, total::text, category FROM items \
         ORDER BY items.id",
    );
    let audit = (
        "SELECT CAST(N AS VARCHAR(10)), CAST(ITEM_ID AS VARCHAR(10)), OP, NOTE FROM AUDIT ORDER BY N",
        "SELECT n::text, item_id::text, op, note FROM audit ORDER BY audit.n",
    );
    // Keys from the generator and the identity, the triggers in their
    // order, the inactive one not at all.
    for (name, price, qty) in [(" saw", "20.00", "1"), ("glue  ", "3.10", "40")] {
        both.same_rows(
            "an insert",
            &format!("INSERT INTO ITEMS (NAME, PRICE, QTY, MADE, CATEGORY) VALUES ('{name}', {price}, {qty}, '2025-01-15', 'tool')"),
            &format!("INSERT INTO items (name, price, qty, made, category) VALUES ('{name}', {price}, {qty}, '2025-01-15', 'tool')"),
        );
    }
    both.same_rows(
        "an update",
        "UPDATE ITEMS SET QTY = QTY + 1 WHERE CATEGORY = 'tool'",
        "UPDATE items SET qty = qty + 1 WHERE category = 'tool'",
    );
    both.same_rows(
        "a delete",
        "DELETE FROM ITEMS WHERE NAME = 'ball'",
        "DELETE FROM items WHERE name = 'ball'",
    );
    let rows = both.same_rows("ITEMS", items.0, items.1);
    assert!(rows.iter().all(|r| r[1].as_deref() != Some("never")));
    assert!(
        rows.iter().any(|r| r[1].as_deref() == Some("saw")),
        "{rows:?}"
    );
    let log = both.same_rows("AUDIT", audit.0, audit.1);
    assert_eq!(log.len(), 4 * 2 + 2 * 2 + 3 + 1, "{log:?}");

    for (what, firebird, postgres, says) in [
        (
            "a negative price",
            "UPDATE ITEMS SET PRICE = -1 WHERE NAME = 'hammer'",
            "UPDATE items SET price = -1 WHERE name = 'hammer'",
            None,
        ),
        (
            "a category not listed",
            "UPDATE ITEMS SET CATEGORY = 'car' WHERE NAME = 'hammer'",
            "UPDATE items SET category = 'car' WHERE name = 'hammer'",
            None,
        ),
        (
            "a name CONTAINING the word, in capitals",
            "INSERT INTO ITEMS (NAME) VALUES ('a FORBIDDEN thing')",
            "INSERT INTO items (name) VALUES ('a FORBIDDEN thing')",
            None,
        ),
        (
            "a quantity the late CHECK refuses",
            "UPDATE ITEMS SET QTY = 450 WHERE NAME = 'hammer'",
            "UPDATE items SET qty = 450 WHERE name = 'hammer'",
            None,
        ),
        (
            "too many, raised by a trigger",
            "UPDATE ITEMS SET QTY = 5000 WHERE NAME = 'hammer'",
            "UPDATE items SET qty = 5000 WHERE name = 'hammer'",
            Some("Too many items: the limit is 1000"),
        ),
    ] {
        both.both_refuse(what, firebird, postgres, says);
    }
    both.same_rows("ITEMS after the refusals", items.0, items.1);
    both.same_rows("AUDIT after the refusals", audit.0, audit.1);

    // Views.
    both.same_rows(
        "CHEAP",
        "SELECT CAST(ID AS VARCHAR(10)), NAME, PRICE_TEXT, CAST(DAYS_TO_2030 AS VARCHAR(10)), \
         CAST(MONTH_MADE AS VARCHAR(4)), CAST(RANKED AS VARCHAR(4)), CAST(SALE AS VARCHAR(20)) FROM CHEAP",
        "SELECT id::text, name, price_text, days_to_2030::text, month_made::text, ranked::text, \
         sale::text FROM cheap",
    );
    both.same_rows(
        "BY_CATEGORY",
        "SELECT CATEGORY, CAST(N AS VARCHAR(10)), CAST(L AS VARCHAR(10)) FROM BY_CATEGORY ORDER BY 1",
        "SELECT category, n::text, l::text FROM by_category ORDER BY 1",
    );
    both.same_rows(
        "QUOTED",
        "SELECT CAST(\"It\"\"s id\" AS VARCHAR(10)) FROM QUOTED ORDER BY \"It\"\"s id\"",
        "SELECT \"It\"\"s id\"::text FROM quoted ORDER BY quoted.\"It\"\"s id\"",
    );

    both.same_rows(
        "A_TOP",
        "SELECT NAME, CAST(SALE AS VARCHAR(20)) FROM A_TOP",
        "SELECT name, sale::text FROM a_top",
    );
    both.same_rows(
        "a procedure named with a quote",
        "SELECT CAST(Y AS VARCHAR(10)) FROM \"Odd\"\"Name\"(41)",
        "SELECT y::text FROM \"Odd\"\"Name\"(41)",
    );

    // Procedures and the function.
    let series = both.same_rows(
        "SERIES(10)",
        "SELECT CAST(K AS VARCHAR(10)), CAST(SQ AS VARCHAR(20)), WORD FROM SERIES(10)",
        "SELECT k::text, sq::text, word FROM series(10)",
    );
    assert_eq!(series.len(), 5, "{series:?}");
    assert_eq!(
        series[0][2].as_deref(),
        Some("odd $fb$ \\t '; DROP TABLE ITEMS; --")
    );
    for (a, b) in [(7, 2), (1, 0), (-9, 4)] {
        both.same_rows(
            &format!("SAFE_DIVIDE({a}, {b})"),
            &format!("SELECT CAST(Q AS VARCHAR(10)), MSG FROM SAFE_DIVIDE({a}, {b})"),
            &format!("SELECT q::text, msg FROM safe_divide({a}, {b})"),
        );
    }
    // An executable procedure (OUT parameters) called with
    // EXECUTE PROCEDURE ... RETURNING_VALUES from a selectable one.
    let prices = both.same_rows(
        "PRICES",
        "SELECT NAME, CAST(WHOLE AS VARCHAR(10)), CAST(CENTS AS VARCHAR(10)) FROM PRICES",
        "SELECT name, whole::text, cents::text FROM prices()",
    );
    assert!(
        prices.contains(&vec![
            Some("hammer".into()),
            Some("12".into()),
            Some("50".into())
        ]),
        "{prices:?}"
    );
    both.same_rows(
        "RESTOCK(10, 5)",
        "SELECT CAST(CHANGED AS VARCHAR(10)) FROM RESTOCK(10, 5)",
        "SELECT changed::text FROM restock(10, 5)",
    );
    both.same_rows("ITEMS after RESTOCK", items.0, items.1);
    both.same_rows("AUDIT after RESTOCK", audit.0, audit.1);
    both.same_rows(
        "DISCOUNTED",
        "SELECT CAST(DISCOUNTED(PRICE, 15) AS VARCHAR(20)) FROM ITEMS ORDER BY ID",
        "SELECT discounted(price, 15)::text FROM items ORDER BY items.id",
    );

    more_psql(&mut both, items);
}

/// Cursors, UPDATE OR INSERT, MERGE, EXECUTE STATEMENT with parameters,
/// context variables, UUIDs: the same rows, and the same rows changed,
/// on both engines.
fn more_psql(both: &mut Both, items: (&str, &str)) {
    // The audit trail in an order that does not depend on the order a
    // scan meets the rows in (a positioned update walks them unsorted).
    let audit = (
        "SELECT CAST(ITEM_ID AS VARCHAR(10)), OP, NOTE FROM AUDIT ORDER BY ITEM_ID, OP, NOTE",
        "SELECT item_id::text, op, note FROM audit ORDER BY audit.item_id, audit.op, audit.note",
    );
    let names = both.same_rows(
        "NAMES_FROM(2): OPEN, FETCH until ROW_COUNT is 0, CLOSE",
        "SELECT NAME, CAST(N AS VARCHAR(10)) FROM NAMES_FROM(2)",
        "SELECT name, n::text FROM names_from(2)",
    );
    // The targets keep the last row's values past the end, as in Firebird.
    assert!(
        names.last().unwrap()[0]
            .as_deref()
            .is_some_and(|n| n.starts_with("kept: ") && n != "kept: "),
        "{names:?}"
    );
    both.same_rows(
        "MARK_DOWN(10): UPDATE and DELETE WHERE CURRENT OF",
        "SELECT CAST(CHANGED AS VARCHAR(10)), CAST(DROPPED AS VARCHAR(10)) FROM MARK_DOWN(10)",
        "SELECT changed::text, dropped::text FROM mark_down(10)",
    );
    both.same_rows("ITEMS after MARK_DOWN", items.0, items.1);
    both.same_rows("AUDIT after MARK_DOWN", audit.0, audit.1);
    for (what, firebird, postgres) in [
        (
            "UPDATE OR INSERT by the primary key, a row that is there",
            "SELECT CAST(N AS VARCHAR(10)) FROM UPSERT_ITEM(1, 'mallet', 9.99)",
            "SELECT n::text FROM upsert_item(1, 'mallet', 9.99)",
        ),
        (
            "UPDATE OR INSERT by the primary key, a new row",
            "SELECT CAST(N AS VARCHAR(10)) FROM UPSERT_ITEM(100, 'kite', 8.00)",
            "SELECT n::text FROM upsert_item(100, 'kite', 8.00)",
        ),
        (
            "UPDATE OR INSERT MATCHING a name that is there",
            "SELECT CAST(N AS VARCHAR(10)) FROM UPSERT_BY_NAME('glue', 7)",
            "SELECT n::text FROM upsert_by_name('glue', 7)",
        ),
        (
            "UPDATE OR INSERT MATCHING a new name: the key from the generator",
            "SELECT CAST(N AS VARCHAR(10)) FROM UPSERT_BY_NAME('rope', 2)",
            "SELECT n::text FROM upsert_by_name('rope', 2)",
        ),
        (
            "MERGE: a row deleted, one updated, one inserted",
            "SELECT CAST(N AS VARCHAR(10)) FROM APPLY_CHANGES",
            "SELECT n::text FROM apply_changes()",
        ),
        (
            "EXECUTE STATEMENT with named and positional parameters, INTO, FOR EXECUTE",
            "SELECT CAST(N AS VARCHAR(10)) FROM RENAME_ITEM('rope', 'cord')",
            "SELECT n::text FROM rename_item('rope', 'cord')",
        ),
    ] {
        let rows = both.same_rows(what, firebird, postgres);
        assert!(!rows.is_empty(), "{what}");
    }
    // Each of them changed the same rows and fired the same triggers.
    let rows = both.same_rows(
        "ITEMS after the upserts, MERGE and rename",
        items.0,
        items.1,
    );
    for name in ["mallet", "kite", "cord", "drill", "honey"] {
        assert!(
            rows.iter().any(|r| r[1].as_deref() == Some(name)),
            "{name}: {rows:?}"
        );
    }
    both.same_rows(
        "AUDIT after the upserts, MERGE and rename",
        audit.0,
        audit.1,
    );
    both.same_rows(
        "BUMP: SELECT ... WITH LOCK, WITH LOCK SKIP LOCKED",
        "SELECT CAST(Q AS VARCHAR(10)), CAST(FIRST_FREE AS VARCHAR(10)) FROM BUMP(3)",
        "SELECT q::text, first_free::text FROM bump(3)",
    );
    both.same_rows(
        "SPANS: timestamp columns of two tables plus days, their difference",
        "SELECT CAST(ID AS VARCHAR(10)), CAST(NEXT_START AS VARCHAR(30)), \
         CAST(NEXT_END AS VARCHAR(30)), CAST(CAST(DAYS AS NUMERIC(18,4)) AS VARCHAR(20)) FROM SPANS",
        "SELECT id::text, to_char(next_start, 'YYYY-MM-DD HH24:MI:SS.0000'), \
         to_char(next_end, 'YYYY-MM-DD HH24:MI:SS.0000'), CAST(days AS numeric(18,4))::text FROM spans",
    );
    both.same_rows(
        "DAYS_LATER: a TIMESTAMP variable plus days, minus another",
        "SELECT CAST(T AS VARCHAR(30)), CAST(HALF AS VARCHAR(30)), CAST(SPAN AS VARCHAR(20)), \
         CAST(LAST_ AS VARCHAR(30)) FROM DAYS_LATER('2024-01-31')",
        "SELECT to_char(t, 'YYYY-MM-DD HH24:MI:SS.0000'), to_char(half, 'YYYY-MM-DD HH24:MI:SS.0000'), \
         span::text, to_char(last_, 'YYYY-MM-DD HH24:MI:SS.0000') FROM days_later('2024-01-31')",
    );
    let made = both.same_rows(
        "NEW_ITEM: INSERT, UPDATE (no row: the target kept), DELETE ... RETURNING ... INTO",
        "SELECT CAST(ID AS VARCHAR(10)), CAST(UNCHANGED AS VARCHAR(10)), CAST(GONE AS VARCHAR(10)) \
         FROM NEW_ITEM('tent')",
        "SELECT id::text, unchanged::text, gone::text FROM new_item('tent')",
    );
    assert_eq!(made[0][1].as_deref(), Some("-7"), "{made:?}");
    assert_eq!(made[0][2].as_deref(), Some("100"), "{made:?}");
    both.same_rows(
        "TAG_TOOLS: a cursor's row read as C.NAME, updated WHERE CURRENT OF",
        "SELECT CAST(N AS VARCHAR(10)) FROM TAG_TOOLS",
        "SELECT n::text FROM tag_tools()",
    );
    let rows = both.same_rows("ITEMS after TAG_TOOLS", items.0, items.1);
    assert!(
        rows.iter()
            .any(|r| r[1].as_deref().is_some_and(|n| n.starts_with("drill#"))),
        "{rows:?}"
    );
    let remembered = both.same_rows(
        "RDB$GET_CONTEXT / RDB$SET_CONTEXT",
        "SELECT STEP, CAST(WAS AS VARCHAR(10)), NOW_ FROM REMEMBER('blue')",
        "SELECT step, was::text, now_ FROM remember('blue')",
    );
    assert_eq!(remembered.len(), 5, "{remembered:?}");
    both.same_rows(
        "GEN_UUID, UUID_TO_CHAR, CHAR_TO_UUID, OVERLAY, POSITION from a start, DATEDIFF across boundaries, EXTRACT(QUARTER)",
        "SELECT CAST(L AS VARCHAR(10)), U, O, CAST(P AS VARCHAR(10)), CAST(P0 AS VARCHAR(10)), \
         CAST(H AS VARCHAR(10)), CAST(M AS VARCHAR(10)), CAST(MS AS VARCHAR(10)), CAST(Q AS VARCHAR(10)), \
         CAST(FW AS VARCHAR(30)), CAST(LQ AS VARCHAR(30)), CAST(LM AS VARCHAR(30)) FROM ONE_ROW",
        "SELECT l::text, u, o, p::text, p0::text, h::text, m::text, ms::text, q::text, fw::text, \
         to_char(lq, 'YYYY-MM-DD HH24:MI:SS.0000'), lm::text FROM one_row",
    );
    both.same_rows(
        "BIN_AND, BIN_OR, BIN_XOR, BIN_SHL, BIN_SHR, BIN_NOT",
        "SELECT CAST(BITS AS VARCHAR(10)) FROM CHECK_QTY(13, 'x')",
        "SELECT bits::text FROM check_qty(13, 'x')",
    );
    both.both_refuse(
        "EXCEPTION ... USING (args): the message filled in",
        "SELECT BITS FROM CHECK_QTY(500, 'glue')",
        "SELECT bits FROM check_qty(500, 'glue')",
        Some("Quantity 500 of glue is out of range (@3)"),
    );
    for (a, b) in [(7, 2), (1, 0), (100000, 1)] {
        both.same_rows(
            &format!("CHECKED({a}, {b}): WHEN SQLCODE -802"),
            &format!("SELECT CAST(Q AS VARCHAR(10)), MSG FROM CHECKED({a}, {b})"),
            &format!("SELECT q::text, msg FROM checked({a}, {b})"),
        );
    }
}

/// `fbunload sample` made as a newcomer makes it (issue #50 item 9), loaded
/// into PostgreSQL: its foreign keys, the key trigger and its generator,
/// the domain with a CHECK, the computed column, the view and the
/// selectable procedure are all made, nothing reported, and behave as in
/// Firebird.
#[test]
fn the_sample_application_behaves_the_same_on_the_postgresql_copy() {
    let Some(uri) = pg_database("fbu_sample_app") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.fdb");
    let made = fbunload_alone(&["sample", db.to_str().unwrap(), "--items", "300", "-q"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let out = fbunload(&db, &["-o", &uri, "--pg-schema", "demo", "-j", "2"]);
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    for made in [
        "view 1/0",
        "computed column 1/0",
        "domain 1/0",
        "domain check 1/0",
        "foreign key 3/0",
        "sequence 1/0",
        "trigger 1/0",
        "procedure 1/0",
    ] {
        assert!(said.contains(made), "{made}: {said}");
    }
    assert!(!said.contains("not translated"), "{said}");
    let mut pg = postgres::Client::connect(&uri, postgres::NoTls).unwrap();
    pg.batch_execute("SET search_path TO demo").unwrap();
    let mut both = Both { db: db.clone(), pg };
    both.same_rows(
        "nothing reported",
        "SELECT CAST(0 AS VARCHAR(1)) FROM RDB$DATABASE",
        "SELECT count(*)::text FROM _fbunload_untranslated",
    );
    // The view is made as a view, not loaded as a table of its rows.
    both.same_rows(
        "LOW_STOCK is a view",
        "SELECT TRIM(RDB$RELATION_NAME) FROM RDB$RELATIONS \
         WHERE RDB$VIEW_BLR IS NOT NULL AND COALESCE(RDB$SYSTEM_FLAG, 0) = 0",
        "SELECT upper(table_name) FROM information_schema.views WHERE table_schema = 'demo'",
    );

    // Left out, ITEM takes what reads it along, each saying why.
    let part = fbunload(
        &db,
        &["-o", &uri, "--pg-schema", "part", "-j", "2", "-x", "ITEM"],
    );
    let said = stderr(&part);
    assert!(part.status.success(), "{said}");
    for why in [
        "view LOW_STOCK: not made: it reads ITEM, which this run did not load",
        "foreign key FK_STOCK_ITEM of STOCK: references a table not loaded",
        "domain PRICE: used by no loaded column",
        "domain check PRICE: its domain PRICE was not made",
        "trigger ITEM_KEY of ITEM: its table was not loaded by this run",
    ] {
        assert!(said.contains(why), "{why}: {said}");
    }

    // Keys from the generator: an insert without one, and one with NULL.
    for (what, firebird, postgres) in [
        (
            "an item without I_ID",
            "INSERT INTO ITEM (I_IM_ID, I_NAME, I_PRICE, I_DATA) VALUES (7, 'new one', 9.99, 'n')",
            "INSERT INTO item (i_im_id, i_name, i_price, i_data) VALUES (7, 'new one', 9.99, 'n')",
        ),
        (
            "an item with a NULL I_ID",
            "INSERT INTO ITEM (I_ID, I_NAME, I_PRICE) VALUES (NULL, 'new two', 1.50)",
            "INSERT INTO item (i_id, i_name, i_price) VALUES (NULL, 'new two', 1.50)",
        ),
    ] {
        both.same_rows(what, firebird, postgres);
    }
    let keys = both.same_rows(
        "the generated keys",
        "SELECT CAST(I_ID AS VARCHAR(10)), I_NAME FROM ITEM WHERE I_NAME STARTING WITH 'new ' \
         ORDER BY I_ID",
        "SELECT i_id::text, i_name FROM item WHERE i_name LIKE 'new %' ORDER BY i_id",
    );
    let expected = |k: &str, n: &str| vec![Some(k.to_string()), Some(n.to_string())];
    assert_eq!(
        keys,
        [expected("301", "new one"), expected("302", "new two")]
    );

    // The domain's CHECK, and the foreign keys.
    for (what, firebird, postgres) in [
        (
            "a price of 0 (domain PRICE)",
            "UPDATE ITEM SET I_PRICE = 0 WHERE I_ID = 1",
            "UPDATE item SET i_price = 0 WHERE i_id = 1",
        ),
        (
            "a new item priced -1 (domain PRICE)",
            "INSERT INTO ITEM (I_NAME, I_PRICE) VALUES ('bad', -1)",
            "INSERT INTO item (i_name, i_price) VALUES ('bad', -1)",
        ),
        (
            "stock of an item that is not there",
            "INSERT INTO STOCK (S_I_ID, S_W_ID, S_QUANTITY) VALUES (9999, 1, 5)",
            "INSERT INTO stock (s_i_id, s_w_id, s_quantity) VALUES (9999, 1, 5)",
        ),
        (
            "an item that stock refers to",
            "DELETE FROM ITEM WHERE I_ID = 1",
            "DELETE FROM item WHERE i_id = 1",
        ),
        (
            "a customer of a district that is not there",
            "UPDATE CUSTOMER SET C_D_ID = 11 WHERE C_W_ID = 1 AND C_D_ID = 1 AND C_ID = 1",
            "UPDATE customer SET c_d_id = 11 WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 1",
        ),
    ] {
        both.both_refuse(what, firebird, postgres, None);
    }

    // The computed column, as loaded and after its inputs change.
    let names = (
        "SELECT C_NAME FROM CUSTOMER WHERE C_W_ID = 1 AND C_D_ID = 1 AND C_ID <= 5 ORDER BY C_ID",
        "SELECT c_name FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id <= 5 ORDER BY c_id",
    );
    assert_eq!(both.same_rows("C_NAME", names.0, names.1).len(), 5);
    both.same_rows(
        "a first name changed",
        "UPDATE CUSTOMER SET C_FIRST = 'Ada' WHERE C_W_ID = 1 AND C_D_ID = 1 AND C_ID = 2",
        "UPDATE customer SET c_first = 'Ada' WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 2",
    );
    let changed = both.same_rows("C_NAME after the change", names.0, names.1);
    assert!(
        changed[1][0].as_deref().unwrap().starts_with("Ada "),
        "{changed:?}"
    );

    // The view, with the new items' stock in it.
    both.same_rows(
        "stock of a new item",
        "INSERT INTO STOCK (S_I_ID, S_W_ID, S_QUANTITY) VALUES (301, 1, 3)",
        "INSERT INTO stock (s_i_id, s_w_id, s_quantity) VALUES (301, 1, 3)",
    );
    let low = both.same_rows(
        "LOW_STOCK",
        "SELECT CAST(W_ID AS VARCHAR(10)), CAST(I_ID AS VARCHAR(10)), I_NAME, \
         CAST(QUANTITY AS VARCHAR(10)) FROM LOW_STOCK ORDER BY I_ID",
        "SELECT w_id::text, i_id::text, i_name, quantity::text FROM low_stock \
         ORDER BY low_stock.i_id",
    );
    assert!(low.len() > 5, "{low:?}");
    assert_eq!(low.last().unwrap()[1].as_deref(), Some("301"));

    // The selectable procedure, for customers with and without new orders.
    let mut totals = 0;
    for customer in [1, 2, 3, 10, 30, 299, 1500, 3000, 3001] {
        let rows = both.same_rows(
            &format!("ORDER_TOTALS(1, 1, {customer})"),
            &format!(
                "SELECT CAST(O_ID AS VARCHAR(10)), CAST(LINES AS VARCHAR(10)), \
                 CAST(TOTAL AS VARCHAR(20)) FROM ORDER_TOTALS(1, 1, {customer})"
            ),
            &format!(
                "SELECT o_id::text, lines::text, total::text FROM order_totals(1, 1, {customer})"
            ),
        );
        totals += rows
            .iter()
            .filter(|r| r[2].as_deref() != Some("0.00"))
            .count();
    }
    assert!(totals > 0, "every order total is 0.00");
}
