//! `--verify`: the rows written, against `COUNT(*)` at the same snapshot.

use fbunload_client::Transaction;
use fbunload_plan::Plan;

use crate::ExecError;

/// Counts every table in `tr` (a transaction at the workers' snapshot)
/// and compares with the rows written.
pub(crate) fn verify(tr: &Transaction, plan: &Plan, rows: &[u64]) -> Result<(), ExecError> {
    let mut mismatches = Vec::new();
    for (table, written) in plan.tables.iter().zip(rows) {
        let sql = format!(
            "SELECT COUNT(*) FROM {}",
            fbunload_plan::quote_identifier(&table.name)
        );
        let counted = (|| {
            let mut stmt = tr.prepare(&sql)?;
            stmt.execute()?;
            stmt.fetch()?;
            let value = stmt.row().value(0).unwrap_or(&[0; 8]);
            Ok::<_, fbunload_client::ClientError>(i64::from_ne_bytes(
                value.try_into().unwrap_or([0; 8]),
            ))
        })()
        .map_err(|e| {
            ExecError::table(&table.name, format!("--verify could not count rows: {e}"))
        })?;
        if counted as u64 != *written {
            mismatches.push(format!(
                "{}: wrote {written}, COUNT(*) {counted}",
                table.name
            ));
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(ExecError::Verify(mismatches.join("; ")))
    }
}
