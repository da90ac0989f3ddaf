//! What the plan's engine tests share.

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
