//! Many tables, as an ERP database has them (`--many-tables N`): most
//! hold a few rows (codes, settings, lookups), a few hold most of the
//! rows. Table `ERP_00001` is the biggest; table `i` (from 1) gets a share
//! of the rows that falls as `i^-1.2` (a Zipf law), at least
//! [`MIN_ROWS`]. With 5,000 tables and 1,000,000 rows the first holds
//! 213,615 rows, the 100th 850 and the last 8; 4,408 tables hold 100
//! rows or fewer, and the 50 biggest 71% of the rows.
//!
//! Each table has the same seven columns of the types ERP tables mix
//! (an integer key, codes and names, money, a quantity, a date, a note),
//! filled by the engine in `EXECUTE BLOCK` loops from the row number, as
//! the TPC-C tables are ([`crate::sql`]): the same options give the same
//! rows. Small tables are filled many to a transaction, so that 5,000
//! tables cost a few hundred commits, not 5,000.

use crate::sql;

/// The fewest rows a table gets.
pub const MIN_ROWS: u64 = 5;

/// The exponent of the size law.
const ZIPF: f64 = 1.2;

/// The name of table `i` (from 1).
pub fn table_name(i: usize) -> String {
    format!("ERP_{i:05}")
}

/// How many rows each of `tables` tables gets, about `total` in all
/// (at least [`MIN_ROWS`] each), biggest first.
pub fn row_counts(tables: usize, total: u64) -> Vec<u64> {
    let weights: Vec<f64> = (1..=tables).map(|i| (i as f64).powf(-ZIPF)).collect();
    let sum: f64 = weights.iter().sum();
    weights
        .iter()
        .map(|w| ((total as f64 * w / sum).round() as u64).max(MIN_ROWS))
        .collect()
}

/// The `CREATE TABLE` of table `i`.
pub fn create_sql(i: usize) -> String {
    let name = table_name(i);
    format!(
        "CREATE TABLE {name} (\
         ID INTEGER NOT NULL CONSTRAINT PK_{name} PRIMARY KEY, \
         CODE VARCHAR(20) NOT NULL, \
         NAME VARCHAR(60), \
         AMOUNT NUMERIC(15, 2), \
         QTY INTEGER, \
         BOOKED DATE, \
         NOTE VARCHAR(200))"
    )
}

/// The `EXECUTE BLOCK` that inserts rows `lo..hi` (IDs `lo + 1..=hi`) of
/// table `i`.
pub fn block(i: usize, lo: u64, hi: u64) -> String {
    let name = table_name(i);
    let salt = 101 + (i as u32 % 1000);
    format!(
        "EXECUTE BLOCK AS\n\
         DECLARE r BIGINT = {lo};\n\
         {}{}\
         BEGIN\n\
         WHILE (r < {hi}) DO\n\
         BEGIN\n\
         {}\
         INSERT INTO {name} (ID, CODE, NAME, AMOUNT, QTY, BOOKED, NOTE) VALUES (\
         :r + 1, 'C' || {}, {}, {}, {}, DATEADD(MOD(:h4, 3650) DAY TO DATE '2015-01-01'), \
         IIF(MOD(:h5, 4) = 0, NULL, {}));\n\
         r = r + 1;\n\
         END\n\
         END",
        sql::hash_decls(6),
        sql::pool_decl(),
        sql::hash_chain("r", salt, 6),
        sql::digits("h1", 8),
        sql::text("h2", 5, 60),
        sql::decimal("h3", -100_000, 10_000_000, 2),
        sql::int_between("h6", 0, 1000),
        sql::text("h5", 10, 200),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_tables_are_small_and_a_few_hold_most_rows() {
        let counts = row_counts(5000, 1_000_000);
        assert_eq!(counts.len(), 5000);
        let total: u64 = counts.iter().sum();
        assert!((990_000..1_030_000).contains(&total), "{total}");
        assert!(counts.windows(2).all(|w| w[0] >= w[1]));
        let big: u64 = counts[..50].iter().sum();
        assert!(big > total / 2, "{big} of {total}");
        let tiny = counts.iter().filter(|&&c| c <= 100).count();
        assert!(tiny > 4000, "{tiny}");
        assert_eq!(row_counts(3, 0), vec![MIN_ROWS; 3]);
    }

    #[test]
    fn names_sort_as_their_numbers() {
        assert_eq!(table_name(1), "ERP_00001");
        assert!(table_name(999) < table_name(1000));
        assert!(create_sql(7).contains("PK_ERP_00007 PRIMARY KEY"));
        let block = block(7, 10, 20);
        assert!(block.contains("WHILE (r < 20)") && block.contains("INSERT INTO ERP_00007"));
    }
}
