//! TLS to PostgreSQL with libpq's parameters, against the private cluster
//! of scripts/pg-cluster.sh, which runs with `ssl=on`, a CA of its own, a
//! server certificate for "localhost" only, a role that may log in over
//! TLS only (fbunload_tls) and one that logs in by client certificate
//! (fbunload_cert). Skipped, saying so, without `FBUNLOAD_TEST_PG_URI`
//! and `FBUNLOAD_TEST_PG_TLS`.

mod common;

use std::path::{Path, PathBuf};

use common::*;

struct Cluster {
    /// `HOST:PORT` of the cluster, without the host.
    port: String,
    tls: PathBuf,
}

fn cluster() -> Option<Cluster> {
    let (Ok(uri), Ok(tls)) = (
        std::env::var("FBUNLOAD_TEST_PG_URI"),
        std::env::var("FBUNLOAD_TEST_PG_TLS"),
    ) else {
        eprintln!(
            "SKIPPED: FBUNLOAD_TEST_PG_URI/_TLS are not set: start a private PostgreSQL with \
             eval \"$(bash scripts/pg-cluster.sh start)\" (scripts/test.sh does)"
        );
        return None;
    };
    let mut admin = postgres::Client::connect(&uri, postgres::NoTls).expect("the test cluster");
    for statement in [
        "DROP DATABASE IF EXISTS tls_db WITH (FORCE)",
        "DROP ROLE IF EXISTS fbunload_tls",
        "DROP ROLE IF EXISTS fbunload_cert",
        "CREATE ROLE fbunload_tls LOGIN PASSWORD 'tls-secret'",
        "CREATE ROLE fbunload_cert LOGIN",
        "CREATE DATABASE tls_db",
        "GRANT ALL ON DATABASE tls_db TO fbunload_tls, fbunload_cert",
    ] {
        admin.batch_execute(statement).unwrap();
    }
    let port = uri.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    Some(Cluster {
        port: port.to_string(),
        tls: PathBuf::from(tls),
    })
}

impl Cluster {
    fn file(&self, name: &str) -> String {
        self.tls.join(name).display().to_string()
    }

    /// Loads `db` as `login` into schema `schema` through `host` with the
    /// URI's `query`.
    fn load(
        &self,
        db: &Path,
        login: &str,
        host: &str,
        query: &str,
        schema: &str,
    ) -> std::process::Output {
        let uri = format!("postgresql://{login}@{host}:{}/tls_db{query}", self.port);
        fbunload(db, &["-q", "-o", &uri, "--pg-schema", schema])
    }
}

#[test]
fn tls_follows_libpq_sslmode_roots_and_client_certificates() {
    let Some(pg) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let tls_user = "fbunload_tls:tls-secret";
    let ca = pg.file("ca.crt");

    // The role may log in over TLS only: without TLS it is refused, and
    // libpq's default (prefer) and require both encrypt.
    let out = pg.load(&db, tls_user, "127.0.0.1", "?sslmode=disable", "plain");
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no encryption"), "{}", stderr(&out));
    for (query, schema) in [("", "by_default"), ("?sslmode=require", "required")] {
        let out = pg.load(&db, tls_user, "127.0.0.1", query, schema);
        assert!(out.status.success(), "{query}: {}", stderr(&out));
    }
    // allow tries without TLS first, then with it when the server refuses.
    let out = pg.load(&db, tls_user, "127.0.0.1", "?sslmode=allow", "allowed");
    assert!(out.status.success(), "{}", stderr(&out));

    // verify-full checks the chain and the name: the certificate names
    // localhost, not 127.0.0.1; verify-ca checks the chain only.
    let verify = |mode: &str, root: &str| format!("?sslmode={mode}&sslrootcert={root}");
    let out = pg.load(
        &db,
        tls_user,
        "localhost",
        &verify("verify-full", &ca),
        "full",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = pg.load(
        &db,
        tls_user,
        "127.0.0.1",
        &verify("verify-full", &ca),
        "wrong_name",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
    let out = pg.load(
        &db,
        tls_user,
        "127.0.0.1",
        &verify("verify-ca", &ca),
        "chain_only",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // A root that did not sign the server's certificate.
    let other = pg.file("client.crt");
    let out = pg.load(
        &db,
        tls_user,
        "localhost",
        &verify("verify-full", &other),
        "untrusted",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("tls-secret"), "{}", stderr(&out));
    // A verifying mode with no root certificate says how to get one.
    let out = pg.load(
        &db,
        tls_user,
        "localhost",
        &verify("verify-ca", "/nonexistent/root.crt"),
        "none",
    );
    assert_refused_in_one_line(
        &out,
        "cannot connect to postgresql://fbunload_tls@localhost",
    );
    assert!(
        stderr(&out).contains("/nonexistent/root.crt"),
        "{}",
        stderr(&out)
    );

    // Certificate authentication: the client's certificate is the login.
    let client = format!(
        "{}&sslcert={}&sslkey={}",
        verify("verify-full", &ca),
        pg.file("client.crt"),
        pg.file("client.key")
    );
    let out = pg.load(&db, "fbunload_cert", "localhost", &client, "by_certificate");
    assert!(out.status.success(), "{}", stderr(&out));
    // A key others may read is refused, as libpq refuses it.
    let open_key = dir.path().join("client.key");
    std::fs::copy(pg.file("client.key"), &open_key).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let client = format!(
        "{}&sslcert={}&sslkey={}",
        verify("verify-full", &ca),
        pg.file("client.crt"),
        open_key.display()
    );
    let out = pg.load(&db, "fbunload_cert", "localhost", &client, "open_key");
    assert_refused_in_one_line(
        &out,
        "cannot connect to postgresql://fbunload_cert@localhost",
    );
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));

    // What was loaded is there, once per successful run.
    let uri = std::env::var("FBUNLOAD_TEST_PG_URI").unwrap();
    let base = uri.rsplit_once('/').unwrap().0;
    let mut admin = postgres::Client::connect(&format!("{base}/tls_db"), postgres::NoTls).unwrap();
    let mut loaded: Vec<String> = admin
        .query(
            "SELECT table_schema::text FROM information_schema.tables WHERE table_name = 'tiny' \
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    loaded.sort();
    assert_eq!(
        loaded,
        [
            "allowed",
            "by_certificate",
            "by_default",
            "chain_only",
            "full",
            "required"
        ]
    );
}
