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
use fbunload_gen::arrays;

fn pg_database(db: &str) -> Option<String> {
    let Ok(uri) = std::env::var("FBUNLOAD_TEST_PG_URI") else {
        eprintln!(
            "SKIPPED: FBUNLOAD_TEST_PG_URI is not set: start a private PostgreSQL with \
             eval \"$(bash scripts/pg-cluster.sh start)\" (scripts/test.sh does)"
        );
        return None;
    };
    let mut admin = postgres::Client::connect(&uri, postgres::NoTls).expect("the test cluster");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .unwrap();
    let base = uri.rsplit_once('/').unwrap().0;
    Some(format!("{base}/{db}"))
}

fn employee(dir: &Path) -> Option<PathBuf> {
    let path = PathBuf::from("/usr/share/doc/firebird3.0-common-doc/examples/employee.sql.gz");
    if !path.is_file() {
        eprintln!(
            "SKIPPED: {} not found (scripts/setup.sh installs it)",
            path.display()
        );
        return None;
    }
    let mut script = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&std::fs::read(&path).unwrap()[..]),
        &mut script,
    )
    .unwrap();
    let db = create_db(dir, "employee.fdb", 8192);
    let statements = arrays::script_statements(&script);
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&db, &statements);
    arrays::fill_employee(&connect(&db)).unwrap();
    Some(db)
}

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
    // row only); SHOW_LANGS reads an array element, and ALL_LANGS selects
    // from SHOW_LANGS.
    assert!(
        reported.iter().any(|r| r.starts_with("check constraint ")
            && r.contains("cannot use subquery in check constraint")),
        "{reported:#?}"
    );
    assert!(
        reported
            .iter()
            .any(|r| r.starts_with("procedure SHOW_LANGS: not translated: line ")),
        "{reported:#?}"
    );
    assert!(
        reported.contains(
            &"procedure ALL_LANGS: not translated: it calls SHOW_LANGS, which is not".to_string()
        ),
        "{reported:#?}"
    );
    for made in ["view PHONE_LIST", "trigger ", "computed column "] {
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
    // A domain's CHECK (SALARY > 0, CUSTNO > 1000) is a domain's, made by
    // the domains' translation where that is in: then it must hold too.
    let domains = both.postgres(
        "SELECT count(*)::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
         WHERE n.nspname = 'emp' AND t.typtype = 'd'",
    );
    if matches!(&domains, Outcome::Rows(r) if r[0][0].as_deref() != Some("0")) {
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
    } else {
        eprintln!("SKIPPED: domain CHECKs (no domains in the PostgreSQL copy)");
    }

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
