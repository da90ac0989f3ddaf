// Apache Arrow ADBC's validation suite (c/validation of apache/arrow-adbc)
// run against fbunload's ADBC driver, loaded by ADBC's own driver manager:
// the quirks of a read-only Firebird driver, and the suite's tests, each
// either run or skipped with the reason it cannot apply.
//
// Compiled into the suite where someone builds it (docs/adbc.md); run by
// scripts/adbc-validation.sh, which also creates the database the tests
// read (make_database.py): the driver never writes, so the tables a test
// would create through it are there beforehand. Firebird's grammar has no
// FROM-less SELECT: the suite's `SELECT 42`s that RewriteSql cannot reach
// fail unless the suite's copy gives them ` FROM RDB$DATABASE`.
//
// Environment: FBUNLOAD_ADBC_DRIVER (the driver's shared library),
// FBUNLOAD_ADBC_DATABASE (the database's path), ISC_USER/ISC_PASSWORD.

#include <cstdlib>
#include <optional>
#include <string>

#include <arrow-adbc/adbc.h>
#include <arrow-adbc/adbc_driver_manager.h>
#include <gtest/gtest.h>

#include "validation/adbc_validation.h"
#include "validation/adbc_validation_util.h"

namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Why a test is skipped: the reasons, once each.
constexpr const char* kWrites =
    "the driver is read-only: this test creates or changes data through it "
    "(ExecuteUpdate is NOT_IMPLEMENTED)";
constexpr const char* kIngest = "no bulk ingestion: the driver never writes";
constexpr const char* kTransactions =
    "no transactions: every read is a read-only snapshot of its own; commit "
    "and rollback have nothing to do (INVALID_STATE while autocommit is on)";
constexpr const char* kSchemas =
    "Firebird before 6 has no catalogs or schemas: the one of each has no name";
constexpr const char* kConstraintDdl =
    "the test creates its constrained tables through the driver; constraints "
    "are tested in crates/adbc/tests/driver.rs instead";
constexpr const char* kStatistics = "GetStatistics is NOT_IMPLEMENTED";
constexpr const char* kUpdateParams =
    "binds parameters to an INSERT, which a read-only driver refuses";

class FirebirdQuirks : public adbc_validation::DriverQuirks {
 public:
  AdbcStatusCode SetupDatabase(struct AdbcDatabase* database,
                               struct AdbcError* error) const override {
    AdbcStatusCode status =
        AdbcDatabaseSetOption(database, "driver", Env("FBUNLOAD_ADBC_DRIVER"), error);
    if (status != ADBC_STATUS_OK) return status;
    status = AdbcDatabaseSetOption(database, "entrypoint", "AdbcDriverFbunloadInit",
                                   error);
    if (status != ADBC_STATUS_OK) return status;
    return AdbcDatabaseSetOption(database, "uri", Env("FBUNLOAD_ADBC_DATABASE"), error);
  }

  // Nothing is dropped: the driver cannot, and the tests that would
  // recreate a table are skipped.
  AdbcStatusCode DropTable(struct AdbcConnection*, const std::string&,
                           struct AdbcError*) const override {
    return ADBC_STATUS_OK;
  }

  // "bulk_ingest" ("int64s" BIGINT, "strings" VARCHAR) with the suite's
  // three rows is in the database already (make_database.py).
  AdbcStatusCode CreateSampleTable(struct AdbcConnection*, const std::string& name,
                                   struct AdbcError*) const override {
    return name == "bulk_ingest" ? ADBC_STATUS_OK : ADBC_STATUS_NOT_IMPLEMENTED;
  }

  std::string RewriteSql(std::string_view query_id,
                         std::string default_sql) const override {
    // Firebird's SELECT always has a FROM; RDB$DATABASE has one row.
    if (query_id == "StatementTest::TestSqlPrepareSelectParams::select-params" ||
        query_id == "StatementTest::TestSqlQueryFloats::cast-1.5-as-float" ||
        query_id == "StatementTest::TestSqlSchemaFloats::cast-1.5-as-float") {
      return default_sql + " FROM RDB$DATABASE";
    }
    return default_sql;
  }

  bool supports_bulk_ingest(const char*) const override { return false; }
  bool supports_cancel() const override { return true; }
  // Every read attaches for itself.
  bool supports_concurrent_statements() const override { return true; }
  bool supports_execute_schema() const override { return true; }
  bool supports_partitioned_data() const override { return true; }
  bool supports_transactions() const override { return false; }
  bool supports_dynamic_parameter_binding() const override { return true; }
  // ExecuteQuery's rows_affected is -1: a read does not count its rows
  // before they are read.
  bool supports_rows_affected() const override { return true; }
  bool supports_get_sql_info() const override { return true; }
  std::optional<adbc_validation::SqlInfoValue> supports_get_sql_info(
      uint32_t info_code) const override {
    switch (info_code) {
      case ADBC_INFO_DRIVER_NAME:
        return "ADBC fbunload driver";
      case ADBC_INFO_VENDOR_NAME:
        return "Firebird";
      case ADBC_INFO_DRIVER_ADBC_VERSION:
        return int64_t{ADBC_VERSION_1_1_0};
      default:
        return std::nullopt;
    }
  }
  bool supports_statistics() const override { return false; }
};

// A fixture of the suite (DatabaseTest, ConnectionTest, StatementTest)
// with these quirks.
template <typename Suite>
class Firebird : public ::testing::Test, public Suite {
 public:
  const adbc_validation::DriverQuirks* quirks() const override { return &quirks_; }
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(this->SetUpTest()); }
  void TearDown() override { ASSERT_NO_FATAL_FAILURE(this->TearDownTest()); }

 protected:
  FirebirdQuirks quirks_;
};

using FirebirdDatabaseTest = Firebird<adbc_validation::DatabaseTest>;
using FirebirdConnectionTest = Firebird<adbc_validation::ConnectionTest>;
using FirebirdStatementTest = Firebird<adbc_validation::StatementTest>;

}  // namespace

// The suite's own lists (ADBCV_TEST_*), written out so that each test is
// either run or skipped here with its reason.
#define RUN(FIXTURE, NAME) \
  TEST_F(FIXTURE, NAME) { Test##NAME(); }
#define SKIP(FIXTURE, NAME, REASON) \
  TEST_F(FIXTURE, NAME) { GTEST_SKIP() << REASON; }

RUN(FirebirdDatabaseTest, NewInit)
RUN(FirebirdDatabaseTest, Release)

RUN(FirebirdConnectionTest, NewInit)
RUN(FirebirdConnectionTest, Release)
RUN(FirebirdConnectionTest, Concurrent)
RUN(FirebirdConnectionTest, AutocommitDefault)
SKIP(FirebirdConnectionTest, AutocommitToggle, kTransactions)
RUN(FirebirdConnectionTest, MetadataCurrentCatalog)
RUN(FirebirdConnectionTest, MetadataCurrentDbSchema)
RUN(FirebirdConnectionTest, MetadataGetInfo)
SKIP(FirebirdConnectionTest, MetadataGetTableSchema, kIngest)
SKIP(FirebirdConnectionTest, MetadataGetTableSchemaDbSchema, kSchemas)
SKIP(FirebirdConnectionTest, MetadataGetTableSchemaEscaping, kIngest)
RUN(FirebirdConnectionTest, MetadataGetTableSchemaNotFound)
RUN(FirebirdConnectionTest, MetadataGetTableTypes)
RUN(FirebirdConnectionTest, MetadataGetObjectsCatalogs)
RUN(FirebirdConnectionTest, MetadataGetObjectsDbSchemas)
RUN(FirebirdConnectionTest, MetadataGetObjectsTables)
RUN(FirebirdConnectionTest, MetadataGetObjectsTablesTypes)
RUN(FirebirdConnectionTest, MetadataGetObjectsColumns)
RUN(FirebirdConnectionTest, MetadataGetObjectsConstraints)
SKIP(FirebirdConnectionTest, MetadataGetObjectsPrimaryKey, kConstraintDdl)
SKIP(FirebirdConnectionTest, MetadataGetObjectsForeignKey, kConstraintDdl)
RUN(FirebirdConnectionTest, MetadataGetObjectsCancel)
SKIP(FirebirdConnectionTest, MetadataGetStatisticNames, kStatistics)

RUN(FirebirdStatementTest, NewInit)
RUN(FirebirdStatementTest, Release)
#define SKIP_INGEST(NAME) SKIP(FirebirdStatementTest, NAME, kIngest)
SKIP_INGEST(SqlIngestBool)
SKIP_INGEST(SqlIngestInt8)
SKIP_INGEST(SqlIngestInt16)
SKIP_INGEST(SqlIngestInt32)
SKIP_INGEST(SqlIngestInt64)
SKIP_INGEST(SqlIngestUInt8)
SKIP_INGEST(SqlIngestUInt16)
SKIP_INGEST(SqlIngestUInt32)
SKIP_INGEST(SqlIngestUInt64)
SKIP_INGEST(SqlIngestFloat16)
SKIP_INGEST(SqlIngestFloat32)
SKIP_INGEST(SqlIngestFloat64)
SKIP_INGEST(SqlIngestString)
SKIP_INGEST(SqlIngestLargeString)
SKIP_INGEST(SqlIngestStringView)
SKIP_INGEST(SqlIngestBinary)
SKIP_INGEST(SqlIngestLargeBinary)
SKIP_INGEST(SqlIngestFixedSizeBinary)
SKIP_INGEST(SqlIngestBinaryView)
SKIP_INGEST(SqlIngestDuration)
SKIP_INGEST(SqlIngestDate32)
SKIP_INGEST(SqlIngestTimestamp)
SKIP_INGEST(SqlIngestTimestampTz)
SKIP_INGEST(SqlIngestInterval)
SKIP_INGEST(SqlIngestStringDictionary)
SKIP_INGEST(SqlIngestListOfInt32)
SKIP_INGEST(SqlIngestListOfString)
SKIP_INGEST(TestSqlIngestStreamZeroArrays)
SKIP_INGEST(SqlIngestTableEscaping)
SKIP_INGEST(SqlIngestColumnEscaping)
SKIP_INGEST(SqlIngestAppend)
SKIP_INGEST(SqlIngestReplace)
SKIP_INGEST(SqlIngestCreateAppend)
SKIP_INGEST(SqlIngestErrors)
SKIP_INGEST(SqlIngestMultipleConnections)
SKIP_INGEST(SqlIngestSample)
SKIP_INGEST(SqlIngestTargetCatalog)
SKIP_INGEST(SqlIngestTargetSchema)
SKIP_INGEST(SqlIngestTargetCatalogSchema)
SKIP_INGEST(SqlIngestTemporary)
SKIP_INGEST(SqlIngestTemporaryAppend)
SKIP_INGEST(SqlIngestTemporaryReplace)
SKIP_INGEST(SqlIngestTemporaryExclusive)
SKIP_INGEST(SqlIngestPrimaryKey)
RUN(FirebirdStatementTest, SqlPartitionedInts)
RUN(FirebirdStatementTest, SqlPrepareGetParameterSchema)
RUN(FirebirdStatementTest, SqlPrepareSelectNoParams)
RUN(FirebirdStatementTest, SqlPrepareSelectParams)
SKIP(FirebirdStatementTest, SqlPrepareUpdate, kUpdateParams)
RUN(FirebirdStatementTest, SqlPrepareUpdateNoParams)
SKIP(FirebirdStatementTest, SqlPrepareUpdateStream, kUpdateParams)
RUN(FirebirdStatementTest, SqlPrepareErrorNoQuery)
RUN(FirebirdStatementTest, SqlPrepareErrorParamCountMismatch)
SKIP(FirebirdStatementTest, SqlBind, kWrites)
SKIP(FirebirdStatementTest, SqlQueryEmpty, kWrites)
RUN(FirebirdStatementTest, SqlQueryInts)
RUN(FirebirdStatementTest, SqlQueryFloats)
RUN(FirebirdStatementTest, SqlQueryStrings)
SKIP(FirebirdStatementTest, SqlQueryInsertRollback, kWrites)
RUN(FirebirdStatementTest, SqlQueryCancel)
RUN(FirebirdStatementTest, SqlQueryErrors)
RUN(FirebirdStatementTest, SqlQueryTrailingSemicolons)
SKIP(FirebirdStatementTest, SqlQueryRowsAffectedDelete, kWrites)
SKIP(FirebirdStatementTest, SqlQueryRowsAffectedDeleteStream, kWrites)
RUN(FirebirdStatementTest, SqlSchemaInts)
RUN(FirebirdStatementTest, SqlSchemaFloats)
RUN(FirebirdStatementTest, SqlSchemaStrings)
RUN(FirebirdStatementTest, SqlSchemaErrors)
SKIP(FirebirdStatementTest, Transactions, kTransactions)
RUN(FirebirdStatementTest, ConcurrentStatements)
RUN(FirebirdStatementTest, ErrorCompatibility)
RUN(FirebirdStatementTest, ResultIndependence)
RUN(FirebirdStatementTest, ResultInvalidation)
