//! One name rule for every option that names a table, view or column
//! (issue #42): as in SQL, an unquoted name is upper-cased and a
//! double-quoted one is exact. The database holds STOCK and a table
//! created as "stock", so each spelling must pick its own.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn names_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "names.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE STOCK (S_I_ID INTEGER, S_QTY INTEGER)",
            "CREATE TABLE \"stock\" (\"s_i_id\" INTEGER, \"x\" INTEGER)",
            "CREATE TABLE \"Mixed Case\" (\"Col A\" INTEGER, ID INTEGER)",
            "CREATE TABLE \"Orders\" (ID INTEGER)",
            "CREATE VIEW V_STOCK AS SELECT S_I_ID FROM STOCK",
            "CREATE VIEW \"v_stock\" AS SELECT \"s_i_id\" FROM \"stock\"",
            "INSERT INTO STOCK VALUES (1, 10)",
            "INSERT INTO STOCK VALUES (2, 20)",
            "INSERT INTO \"stock\" VALUES (101, 7)",
            "INSERT INTO \"stock\" VALUES (102, 8)",
            "INSERT INTO \"Mixed Case\" VALUES (5, 50)",
            "INSERT INTO \"Orders\" VALUES (9)",
        ],
    );
    db
}

/// Unloads into a new directory and returns its table files, each with
/// its CSV lines (the header first), by name.
fn unload(db: &Path, dir: &Path, args: &[&str]) -> Vec<(String, Vec<Vec<String>>)> {
    let out = dir.join(format!("out{}", std::fs::read_dir(dir).unwrap().count()));
    let mut all = args.to_vec();
    all.extend(["-o", out.to_str().unwrap(), "--no-schema"]);
    let run = fbunload(db, &all);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
    files(&out)
        .into_iter()
        .map(|(name, _)| {
            let lines = csv_lines(&out.join(&name));
            (name, lines)
        })
        .collect()
}

fn rows(lines: &[Vec<String>]) -> Vec<String> {
    lines.iter().map(|l| l.join(",")).collect()
}

/// The names of the files, and each file's lines joined.
fn shown(files: &[(String, Vec<Vec<String>>)]) -> Vec<(String, Vec<String>)> {
    files.iter().map(|(n, l)| (n.clone(), rows(l))).collect()
}

fn file(name: &str, lines: &[&str]) -> (String, Vec<String>) {
    (
        name.to_string(),
        lines.iter().map(|l| l.to_string()).collect(),
    )
}

#[test]
fn tables_and_exclude_take_unquoted_as_upper_case_and_quoted_as_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = names_db(dir.path());
    let upper = file("STOCK.csv", &["S_I_ID,S_QTY", "1,10", "2,20"]);
    let lower = file("stock.csv", &["s_i_id,x", "101,7", "102,8"]);
    let mixed = file("Mixed Case.csv", &["Col A,ID", "5,50"]);
    let orders = file("Orders.csv", &["ID", "9"]);
    for (args, want) in [
        (&["-t", "stock"][..], vec![upper.clone()]),
        (&["-t", "STOCK"], vec![upper.clone()]),
        (&["-t", "\"stock\""], vec![lower.clone()]),
        (&["-t", "\"Mixed Case\""], vec![mixed.clone()]),
        // Patterns: unquoted parts upper-cased, quoted parts exact.
        (&["-t", "st%"], vec![upper.clone()]),
        (&["-t", "\"st\"%"], vec![lower.clone()]),
        (
            &["-t", "\"sto\"_\"k\"|\"Mixed\"%"],
            vec![mixed.clone(), lower.clone()],
        ),
        (
            &["-t", "stock, \"stock\""],
            vec![upper.clone(), lower.clone()],
        ),
        (&["-t", "[s]tock"], vec![upper.clone()]),
        (
            &["-x", "stock"],
            vec![mixed.clone(), orders.clone(), lower.clone()],
        ),
        (
            &["-x", "\"stock\",\"Orders\""],
            vec![mixed.clone(), upper.clone()],
        ),
        (
            &["-t", "%", "-x", "\"Mixed Case\"|%\"s\""],
            vec![upper.clone(), lower.clone()],
        ),
    ] {
        assert_eq!(shown(&unload(&db, dir.path(), args)), want, "{args:?}");
    }
}

#[test]
fn columns_where_split_by_and_views_follow_the_same_rule() {
    let dir = tempfile::tempdir().unwrap();
    let db = names_db(dir.path());
    let both = ["-t", "stock,\"stock\""];
    let got = unload(
        &db,
        dir.path(),
        &[
            &both[..],
            &[
                "--columns",
                "stock:s_qty",
                "--columns",
                "\"stock\":\"x\",\"s_i_id\"",
            ],
            &[
                "--where",
                "stock:s_i_id = 2",
                "--where",
                "\"stock\": \"x\" = 7",
            ],
        ]
        .concat(),
    );
    assert_eq!(
        shown(&got),
        [
            file("STOCK.csv", &["S_QTY", "20"]),
            file("stock.csv", &["x,s_i_id", "7,101"]),
        ]
    );
    let got = unload(
        &db,
        dir.path(),
        &["-t", "\"Mixed Case\"", "--columns", "\"Col A\""],
    );
    assert_eq!(shown(&got), [file("Mixed Case.csv", &["Col A", "5"])]);

    // --split-by names the query's table as its FROM does.
    let got = unload(
        &db,
        dir.path(),
        &[
            "--query",
            "SELECT S_QTY FROM stock",
            "--name",
            "UPPER",
            "--split-by",
            "stock",
            "--query",
            "SELECT \"x\" FROM \"stock\" s",
            "--name",
            "LOWER",
            "--split-by",
            "\"stock\"",
        ],
    );
    assert_eq!(
        shown(&got),
        [
            file("LOWER.csv", &["x", "7", "8"]),
            file("UPPER.csv", &["S_QTY", "10", "20"]),
        ]
    );

    for (views, want) in [
        ("v_stock", file("V_STOCK.csv", &["S_I_ID", "1", "2"])),
        (
            "\"v_stock\"",
            file("v_stock.csv", &["s_i_id", "101", "102"]),
        ),
    ] {
        let got = unload(&db, dir.path(), &["--views", views]);
        assert_eq!(shown(&got), [want], "{views}");
    }
}

#[test]
fn a_name_that_names_nothing_says_how_to_write_the_one_meant() {
    let dir = tempfile::tempdir().unwrap();
    let db = names_db(dir.path());
    let out = dir.path().join("out");
    let out_arg = out.to_str().unwrap();
    for (args, message) in [
        (
            &["-t", "orders"][..],
            "--tables 'orders': ORDERS is not the name of a table (unquoted names are \
             upper-cased, as in SQL: did you mean \"Orders\"? --tables '\"Orders\"')",
        ),
        (
            &["-t", "\"Stock\""],
            "--tables '\"Stock\"': Stock is not the name of a table (a quoted name is \
             exact: did you mean STOCK? --tables STOCK)",
        ),
        (
            &["-x", "Mixed Case"],
            "--exclude 'Mixed Case': MIXED CASE is not the name of a table (unquoted names \
             are upper-cased, as in SQL: did you mean \"Mixed Case\"? --exclude '\"Mixed \
             Case\"')",
        ),
        (
            &["--views", "\"V_Stock\""],
            "--views '\"V_Stock\"': V_Stock is not the name of a view (a quoted name is \
             exact: did you mean V_STOCK? --views V_STOCK)",
        ),
        (
            &["-t", "\"stock"],
            "--tables '\"stock' is not a valid SIMILAR TO pattern: a quoted name is not \
             closed",
        ),
        (
            &["-t", "\"Orders\"", "--columns", "orders:id"],
            "--columns: table orders is not among the tables selected (unquoted names are \
             upper-cased, as in SQL: did you mean \"Orders\"? --columns '\"Orders\":...')",
        ),
        (
            &["-t", "\"stock\"", "--columns", "S_I_ID"],
            "--columns: table stock has no column S_I_ID (unquoted names are upper-cased, \
             as in SQL: did you mean \"s_i_id\"? write \"s_i_id\"); its columns are s_i_id, x",
        ),
        (
            &["-t", "STOCK", "--where", "\"stock\":1=1"],
            "--where: table \"stock\" is not among the tables selected (a quoted name is \
             exact: did you mean STOCK? --where STOCK:...)",
        ),
        (
            &[
                "--query",
                "SELECT * FROM \"stock\"",
                "--name",
                "Q",
                "--split-by",
                "stock",
            ],
            "--query Q: --split-by stock: the query's FROM must begin with that table, and \
             it begins with \"stock\" (unquoted names are upper-cased, as in SQL: did you \
             mean \"stock\"? --split-by '\"stock\"')",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["-o", out_arg]);
        let run = fbunload(&db, &all);
        assert_refused_in_one_line(&run, message);
        assert!(!out.exists(), "{args:?} left {out:?}");
    }
}
