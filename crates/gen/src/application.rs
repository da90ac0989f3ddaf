//! What an application keeps in the database besides its rows, added to
//! the TPC-C tables for `fbunload sample`: a newcomer loading the sample
//! into PostgreSQL sees each translated (docs/postgresql.md walks
//! through it), and the tests check that the copy behaves as Firebird.
//!
//! - foreign keys: DISTRICT → WAREHOUSE, CUSTOMER → DISTRICT,
//!   STOCK → ITEM;
//! - a generator and the BEFORE INSERT trigger that fills ITEM's key
//!   from it when none is given, the way Firebird applications made keys
//!   before identity columns; the generator starts after the last item;
//! - a domain with a CHECK, PRICE, that ITEM.I_PRICE is declared with;
//! - a computed column, CUSTOMER.C_NAME;
//! - a view, LOW_STOCK;
//! - a selectable procedure (SUSPEND), ORDER_TOTALS.
//!
//! Only on request ([`crate::GenOptions::application`]): the tests that
//! count a generated database's objects, or compare its `schema.sql`,
//! know the tables alone. Nothing here changes a row, and computed
//! columns and views are not unloaded, so every file unloaded from the
//! sample is the same with or without them.

use crate::tables::Table;

/// The tables these objects are made on.
pub const TABLES: [Table; 7] = [
    Table::Warehouse,
    Table::District,
    Table::Customer,
    Table::Item,
    Table::Stock,
    Table::Orders,
    Table::OrderLine,
];

/// The names of what [`ddl`] makes, by the catalog table that lists
/// them: a file holding every one is taken to have them all.
pub const OBJECTS: [(&str, &str, &str); 5] = [
    ("RDB$GENERATORS", "RDB$GENERATOR_NAME", "ITEM_ID_GEN"),
    ("RDB$TRIGGERS", "RDB$TRIGGER_NAME", "ITEM_KEY"),
    ("RDB$FIELDS", "RDB$FIELD_NAME", "PRICE"),
    ("RDB$RELATIONS", "RDB$RELATION_NAME", "LOW_STOCK"),
    ("RDB$PROCEDURES", "RDB$PROCEDURE_NAME", "ORDER_TOTALS"),
];

/// The DDL, in an order Firebird takes in one transaction once the
/// tables are filled and have their primary keys.
pub fn ddl() -> Vec<&'static str> {
    vec![
        "ALTER TABLE DISTRICT ADD CONSTRAINT FK_DISTRICT_WAREHOUSE \
         FOREIGN KEY (D_W_ID) REFERENCES WAREHOUSE (W_ID)",
        "ALTER TABLE CUSTOMER ADD CONSTRAINT FK_CUSTOMER_DISTRICT \
         FOREIGN KEY (C_W_ID, C_D_ID) REFERENCES DISTRICT (D_W_ID, D_ID)",
        "ALTER TABLE STOCK ADD CONSTRAINT FK_STOCK_ITEM \
         FOREIGN KEY (S_I_ID) REFERENCES ITEM (I_ID)",
        "CREATE DOMAIN PRICE AS NUMERIC(5,2) CHECK (VALUE > 0)",
        // The same type: only the domain, and so its CHECK, is new.
        "ALTER TABLE ITEM ALTER COLUMN I_PRICE TYPE PRICE",
        "ALTER TABLE CUSTOMER ADD C_NAME COMPUTED BY (C_FIRST || ' ' || C_LAST)",
        "CREATE SEQUENCE ITEM_ID_GEN",
        "CREATE TRIGGER ITEM_KEY FOR ITEM ACTIVE BEFORE INSERT POSITION 0 AS\n\
         BEGIN\n  \
           IF (NEW.I_ID IS NULL) THEN NEW.I_ID = NEXT VALUE FOR ITEM_ID_GEN;\n\
         END",
        "CREATE VIEW LOW_STOCK (W_ID, I_ID, I_NAME, QUANTITY) AS\n\
         SELECT S.S_W_ID, I.I_ID, I.I_NAME, S.S_QUANTITY\n\
         FROM STOCK S JOIN ITEM I ON I.I_ID = S.S_I_ID\n\
         WHERE S.S_QUANTITY < 20",
        "CREATE PROCEDURE ORDER_TOTALS (W_ID INTEGER, D_ID SMALLINT, C_ID INTEGER)\n\
         RETURNS (O_ID INTEGER, LINES INTEGER, TOTAL NUMERIC(12,2))\n\
         AS\n\
         BEGIN\n  \
           FOR SELECT O.O_ID, COUNT(*), SUM(L.OL_AMOUNT)\n      \
             FROM ORDERS O JOIN ORDER_LINE L\n        \
               ON L.OL_W_ID = O.O_W_ID AND L.OL_D_ID = O.O_D_ID AND L.OL_O_ID = O.O_ID\n      \
             WHERE O.O_W_ID = :W_ID AND O.O_D_ID = :D_ID AND O.O_C_ID = :C_ID\n      \
             GROUP BY O.O_ID ORDER BY O.O_ID\n      \
             INTO :O_ID, :LINES, :TOTAL\n  \
           DO SUSPEND;\n\
         END",
    ]
}

/// Moves the generator past the keys `items` rows of ITEM use, so that
/// the next key the trigger gives is `items + 1` (a statement, not
/// `ALTER SEQUENCE ... RESTART`, whose next value differs between
/// Firebird 3 and 4).
pub fn generator_sql(items: u32) -> String {
    format!("SELECT GEN_ID(ITEM_ID_GEN, {items}) FROM RDB$DATABASE")
}
