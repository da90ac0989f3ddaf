-- The tables unloaded by fbunload, as they were at the run's snapshot.
-- Run it into an empty database: isql -ch UTF8 -i schema.sql DATABASE
-- Load the data after the tables and before the keys for speed.
-- Written: the user-defined collations the columns use, sequences (at
-- their values), tables (columns with types, defaults, NOT NULL,
-- collations, identity, computed columns, BLOB segment sizes, ARRAY
-- dimensions), primary, unique and foreign keys, indices (expression
-- and partial ones too).
-- Not written: views, triggers, procedures, functions, packages,
-- exceptions, domains (resolved to types: a domain's CHECK is lost),
-- CHECK constraints, grants, roles and comments.

CREATE TABLE "ALL_TYPES" (
    "ID" INTEGER NOT NULL,
    "C_SMALLINT" SMALLINT,
    "C_INTEGER" INTEGER,
    "C_BIGINT" BIGINT,
    "C_INT128" INT128,
    "C_NUMERIC_4_1" NUMERIC(4,1),
    "C_NUMERIC_9_3" NUMERIC(9,3),
    "C_NUMERIC_18_4" NUMERIC(18,4),
    "C_NUMERIC_38_6" NUMERIC(38,6),
    "C_DECIMAL_10_2" DECIMAL(10,2),
    "C_FLOAT" FLOAT,
    "C_DOUBLE" DOUBLE PRECISION,
    "C_DECFLOAT16" DECFLOAT(16),
    "C_DECFLOAT34" DECFLOAT(34),
    "C_DATE" DATE,
    "C_TIME" TIME,
    "C_TIMESTAMP" TIMESTAMP,
    "C_TIME_TZ" TIME WITH TIME ZONE,
    "C_TIMESTAMP_TZ" TIMESTAMP WITH TIME ZONE,
    "C_BOOLEAN" BOOLEAN,
    "C_CHAR" CHAR(10) CHARACTER SET UTF8,
    "C_VARCHAR" VARCHAR(100) CHARACTER SET UTF8,
    "C_VARCHAR_WIN1252" VARCHAR(20) CHARACTER SET WIN1252,
    "C_CHAR_OCTETS" CHAR(8) CHARACTER SET OCTETS,
    "C_VARCHAR_OCTETS" VARCHAR(16) CHARACTER SET OCTETS,
    "C_BLOB_TEXT" BLOB SUB_TYPE TEXT CHARACTER SET UTF8,
    "C_BLOB_BINARY" BLOB SUB_TYPE BINARY
);

CREATE TABLE "EMPTY_TABLE" (
    "ID" INTEGER NOT NULL,
    "NAME" VARCHAR(20) CHARACTER SET UTF8,
    "CREATED" TIMESTAMP
);

CREATE TABLE "Mixed Case ""Quoted""" (
    "Id" INTEGER NOT NULL,
    "Display Name" VARCHAR(30) CHARACTER SET UTF8,
    "lower_case" INTEGER,
    "PLAIN_UPPER" VARCHAR(10) CHARACTER SET UTF8
);

-- Primary and unique keys
ALTER TABLE "ALL_TYPES" ADD CONSTRAINT "PK_ALL_TYPES" PRIMARY KEY ("ID");
ALTER TABLE "EMPTY_TABLE" ADD PRIMARY KEY ("ID");
ALTER TABLE "Mixed Case ""Quoted""" ADD PRIMARY KEY ("Id");

COMMIT;
