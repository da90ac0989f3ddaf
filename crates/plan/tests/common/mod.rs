//! What the plan's engine tests share.

use std::path::Path;
use std::sync::Arc;

use fbunload_client::{Attachment, Client, ConnectOptions};

/// An attachment to the database at `path` as SYSDBA, in UTF8.
pub fn connect(client: &Arc<Client>, path: &str) -> Attachment {
    Attachment::connect(
        client,
        &ConnectOptions {
            database: path.into(),
            user: Some("SYSDBA".into()),
            password: Some("masterkey".into()),
            charset: "UTF8".into(),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A new, empty database `name` in `dir`: its path and an attachment to it.
pub fn new_database(client: &Arc<Client>, dir: &Path, name: &str) -> (String, Attachment) {
    let path = dir.join(name).to_string_lossy().into_owned();
    drop(
        Attachment::create_database(
            client,
            &format!("CREATE DATABASE '{path}' USER 'SYSDBA' PASSWORD 'masterkey'"),
        )
        .unwrap(),
    );
    let att = connect(client, &path);
    (path, att)
}
