"""The errors a user meets, each provoked once and reported as PySpark raised it: [PySpark class,
getCondition(), getSqlState(), sparklance.errors.is_retryable()]. test_errors.py runs them in a
classic session, connect_client.py ("errors") over Spark Connect: the answers must be the same."""
import os
import tempfile
import threading
import time

from pyspark.errors import PySparkException

import sparklance
from racing_writers import task_gate


def _caught(action):
    try:
        action()
    except PySparkException as e:
        return [type(e).__name__, e.getCondition(), e.getSqlState(), sparklance.errors.is_retryable(e)]
    return None


def _racing_update(spark, table, path):
    """An UPDATE of `table` during which pylance appends a row it could have read: its WHERE holds
    the job's tasks (a plain Python UDF, which needs nothing but the standard library in Spark's
    Python workers) until this process has appended. Under serializable isolation (the default)
    the UPDATE's commit then conflicts."""
    import lance
    import pyarrow as pa
    directory = tempfile.mkdtemp(prefix="race-")
    gate, reached, opened = task_gate(directory)

    spark.udf.register("race_gate", gate, "boolean")
    outcome = {}

    def update():
        try:
            spark.sql(f"UPDATE {table} SET name = 'updated' WHERE race_gate(id)").collect()
        except Exception as e:  # noqa: BLE001 - raised again below, in the caller's thread
            outcome["error"] = e

    runner = threading.Thread(target=update)
    runner.start()
    try:
        while not os.path.exists(reached):
            if not runner.is_alive():
                break
            time.sleep(0.02)
        dataset = lance.dataset(path)
        lance.write_dataset(pa.table({"id": [1], "name": ["racer"]}, schema=dataset.schema), path, mode="append")
    finally:
        open(opened, "w").close()
        runner.join(timeout=300)
    if "error" in outcome:
        raise outcome["error"]


def run(spark, warehouse, prefix):
    """Runs every case on tables named `<prefix>_...` in lance.db; returns {case: report}."""
    t = f"lance.db.{prefix}_errors"
    path = os.path.join(str(warehouse), "db", f"{prefix}_errors.lance")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, name STRING)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    # A table whose data files were deleted under it: the scan's tasks fail, on the executors.
    gone = f"lance.db.{prefix}_gone"
    spark.sql(f"CREATE TABLE {gone} AS SELECT id FROM range(3)")
    data = os.path.join(str(warehouse), "db", f"{prefix}_gone.lance", "data")
    for f in os.listdir(data):
        os.remove(os.path.join(data, f))
    procedure = f"CALL lance.system.create_index(table => 'db.{prefix}_errors', column => "
    vectors = f"lance.db.{prefix}_vectors"
    spark.sql(f"CREATE TABLE {vectors} (id BIGINT, v ARRAY<FLOAT>) TBLPROPERTIES ('v.arrow.fixed-size-list.size' = '3')")
    spark.sql(f"CREATE TABLE lance.db.{prefix}_required (id BIGINT NOT NULL, name STRING)")
    required = os.path.join(str(warehouse), "db", f"{prefix}_required.lance")
    # A catalog whose settings are wrong fails when a statement first uses it.
    bad_catalog = f"{prefix}_badcat"
    spark.conf.set(f"spark.sql.catalog.{bad_catalog}", "sparklance.spark.LanceCatalog")
    spark.conf.set(f"spark.sql.catalog.{bad_catalog}.warehouse", str(warehouse))
    spark.conf.set(f"spark.sql.catalog.{bad_catalog}.commit_retries", "many")
    return {
        "missing_table": _caught(lambda: spark.table(f"lance.db.{prefix}_nosuch").collect()),
        "missing_column": _caught(lambda: spark.sql(f"SELECT nosuch FROM {t}").collect()),
        "missing_procedure_column": _caught(lambda: spark.sql(procedure + "'nosuch')").collect()),
        "bad_procedure_argument": _caught(lambda: spark.sql(procedure + "'id', rows_per_zone => 0)").collect()),
        "missing_version": _caught(lambda: spark.sql(f"SELECT * FROM {t} VERSION AS OF 99").collect()),
        "missing_tag": _caught(lambda: spark.sql(f"SELECT * FROM {t} VERSION AS OF 'nosuch'").collect()),
        "missing_version_by_path": _caught(
            lambda: spark.read.format("lance").option("versionAsOf", "99").load(path).collect()),
        "bad_option": _caught(lambda: spark.read.format("lance").option("versionAsOf", "1").option("tag", "x")
                              .load(path).collect()),
        "bad_property": _caught(lambda: spark.sql(
            f"CREATE TABLE lance.db.{prefix}_typo (id BIGINT) TBLPROPERTIES ('enable_stable_rowids' = 'true')")),
        "file_gone_in_a_task": _caught(lambda: spark.table(gone).collect()),
        "commit_conflict": _caught(lambda: _racing_update(spark, t, path)),
        "wrong_vector_dimension": _caught(lambda: spark.sql(f"INSERT INTO {vectors} VALUES (1, array(1.0, 2.0))")),
        "null_in_not_null_column": _caught(lambda: spark.sql("SELECT CAST(NULL AS BIGINT) AS id, 'x' AS name")
                                           .write.format("lance").mode("append").save(required)),
        "bad_namespace_name": _caught(lambda: spark.sql("CREATE NAMESPACE lance.`.hidden`")),
        "bad_catalog_setting": _caught(lambda: spark.sql(f"SHOW NAMESPACES IN {bad_catalog}").collect()),
        "missing_text_index": _caught(lambda: spark.sql(
            f"SELECT * FROM text_search(table => '{t}', column => 'name', query => 'a')").collect()),
    }


# What each case must raise, in classic and Connect sessions alike.
EXPECTED = {
    "missing_table": ["AnalysisException", "TABLE_OR_VIEW_NOT_FOUND", "42P01", False],
    "missing_column": ["AnalysisException", "UNRESOLVED_COLUMN.WITH_SUGGESTION", "42703", False],
    "missing_procedure_column": ["AnalysisException", "LANCE_COLUMN_NOT_FOUND", "42703", False],
    "bad_procedure_argument": ["IllegalArgumentException", "LANCE_INVALID_ARGUMENT", "22023", False],
    "missing_version": ["AnalysisException", "LANCE_VERSION_NOT_FOUND", "42704", False],
    "missing_tag": ["AnalysisException", "LANCE_TAG_NOT_FOUND", "42704", False],
    "missing_version_by_path": ["AnalysisException", "LANCE_VERSION_NOT_FOUND", "42704", False],
    "bad_option": ["AnalysisException", "LANCE_INVALID_OPTION", "42616", False],
    "bad_property": ["AnalysisException", "LANCE_INVALID_TABLE_PROPERTY", "42602", False],
    "file_gone_in_a_task": ["QueryExecutionException", "LANCE_FILE_GONE", "58P01", True],
    "commit_conflict": ["QueryExecutionException", "LANCE_CONCURRENT_COMMIT_CONFLICT", "40001", True],
    "wrong_vector_dimension": ["QueryExecutionException", "LANCE_INVALID_VALUE", "22000", False],
    # Spark checks NOT NULL before the rows reach sparklance, also on the path data source.
    "null_in_not_null_column": ["SparkRuntimeException", "NOT_NULL_ASSERT_VIOLATION", "42000", False],
    "bad_namespace_name": ["AnalysisException", "LANCE_INVALID_NAME", "42602", False],
    "bad_catalog_setting": ["AnalysisException", "LANCE_INVALID_OPTION", "42616", False],
    "missing_text_index": ["AnalysisException", "LANCE_INDEX_NOT_FOUND", "42704", False],
}
