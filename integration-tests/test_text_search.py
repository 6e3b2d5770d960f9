"""Issue 35: text_search(...), the table function of full-text search over an INVERTED index pylance
built. Its rows and `_score`s must be pylance's `full_text_query` answer on the same version: after a
Spark DELETE and a Spark append (rows of fragments the index does not cover are tokenized at query
time), at an older version, on a table named by location, and read by a Spark job as well as on the
driver. Bad arguments fail with typed errors."""
import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from conftest import table_path
from test_fts_format import assert_same, compare, corpus, ours, theirs

K = 20


def _create(spark, warehouse, name, stable):
    """`name`: 2000 rows of generated text in 4 fragments, written and indexed (INVERTED on `text`) by pylance."""
    path = table_path(warehouse, name)
    docs = corpus(2000, seed=35)
    table = pa.table({"id": pa.array(range(2000), pa.int64()), "text": pa.array(docs, pa.string()),
                      "tag": pa.array([f"t{i % 7}" for i in range(2000)], pa.string())})
    lance.write_dataset(table, path, max_rows_per_file=500, enable_stable_row_ids=stable)
    lance.dataset(path).create_scalar_index("text", "INVERTED")
    return path


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable_row_ids"])
def test_rows_and_scores_equal_pylances_through_dml_and_time_travel(spark, warehouse, stable):
    name = f"lance.db.ts_{'stable' if stable else 'addr'}"
    path = _create(spark, warehouse, name, stable)
    assert compare(spark, path, name) > 100
    indexed = lance.dataset(path).version

    spark.sql(f"DELETE FROM {name} WHERE id % 3 = 0")
    # An append no index covers: its rows are tokenized at query time, the repeated ones lead.
    spark.sql(f"INSERT INTO {name} VALUES (5000, 'hello hello world', 'new'), (5001, 'hello world', 'new'), "
              f"(5002, 'zebra zebra zebra', 'new')")
    assert compare(spark, path, name) > 100
    assert [i for i, _ in ours(spark, name, "hello world", 2)] == [5000, 5001]
    assert all(i % 3 != 0 for i, _ in ours(spark, name, "hello world", 2000) if i < 5000)

    # The version the index was built on, searched as it was: deleted rows are back, the new ones absent.
    assert compare(spark, path, name, version=indexed) > 100
    assert 5000 not in {i for i, _ in ours(spark, name, "hello world", 2000, version=indexed)}


def test_every_column_and_score_by_location_positionally_and_by_a_spark_job(spark, warehouse):
    name = "lance.db.ts_columns"
    path = _create(spark, warehouse, name, stable=False)
    by_name = spark.sql(f"SELECT * FROM text_search(table => '{name}', column => 'text', query => 'quick brown fox', k => 15)")
    assert [(f.name, f.dataType.simpleString()) for f in by_name.schema.fields] == \
        [("id", "bigint"), ("text", "string"), ("tag", "string"), ("_score", "float")]
    rows = by_name.collect()
    assert len(rows) == 15 and all(r.tag == f"t{r.id % 7}" for r in rows)
    assert [r._score for r in rows] == sorted((r._score for r in rows), reverse=True)
    assert_same([(r.id, r._score) for r in rows], theirs(path, "quick brown fox", 15), "quick brown fox")

    # Positional arguments (table, column, query, k, version), the table by its location.
    by_location = spark.sql(f"SELECT * FROM text_search('lance.`{path}`', 'text', 'quick brown fox', 15)").collect()
    assert by_location == rows

    # An answer above the driver-side bound is read by a Spark job (a scan of its row ids): the same rows, in order.
    spark.conf.set("spark.sparklance.vector_search.driver_read_rows", "0")
    try:
        by_job = spark.sql(f"SELECT * FROM text_search('{name}', 'text', 'quick brown fox', 15)")
        assert "LocalTableScan" not in by_job._jdf.queryExecution().executedPlan().toString()
        assert by_job.collect() == rows
    finally:
        spark.conf.unset("spark.sparklance.vector_search.driver_read_rows")

    # A query no document matches, or with no token at all, has no rows.
    assert ours(spark, name, "nothing-here", K) == [] and ours(spark, name, "the of", K) == []


@pytest.mark.parametrize("arguments,condition,says", [
    ("column => 'tag', query => 'x'", "LANCE_INDEX_NOT_FOUND", "Column 'tag' of"),
    ("column => 'nope', query => 'x'", "LANCE_INVALID_ARGUMENT", "has no column 'nope'; its columns are id, text, tag"),
    ("column => 'id', query => 'x'", "LANCE_INVALID_ARGUMENT", "column 'id' of lance.db.ts_errors is BIGINT, not a string column"),
    ("column => 'text', query => 'x', k => 0", "LANCE_INVALID_ARGUMENT", "argument 'k' must be a positive integer, got 0"),
    ("column => 'text', query => 'x', k => -3", "LANCE_INVALID_ARGUMENT", "argument 'k' must be a positive integer, got -3"),
    ("column => 'text'", "LANCE_INVALID_ARGUMENT", "needs the arguments query"),
    ("column => 'text', query => NULL", "LANCE_INVALID_ARGUMENT", "argument 'query' is NULL"),
    ("column => 'text', query => 'x', columns => 'text'", "LANCE_INVALID_ARGUMENT", "has no argument 'columns'"),
    ("column => 'text', query => 'x', version => 99", "LANCE_VERSION_NOT_FOUND", "has no version 99"),
], ids=["no_index", "unknown_column", "not_a_string", "k_zero", "k_negative", "no_query", "null_query",
        "unknown_argument", "unknown_version"])
def test_bad_arguments_fail_with_typed_errors(spark, warehouse, arguments, condition, says):
    name = "lance.db.ts_errors"
    if not spark.catalog.tableExists(name):
        _create(spark, warehouse, name, stable=False)
    with pytest.raises(PySparkException) as err:
        spark.sql(f"SELECT * FROM text_search(table => '{name}', {arguments})").collect()
    assert err.value.getCondition() == condition and says in str(err.value), str(err.value)
