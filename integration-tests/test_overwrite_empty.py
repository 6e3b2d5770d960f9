"""Overwrites of no rows. A dynamic overwrite (`writeTo(t).overwritePartitions()`, or INSERT OVERWRITE
under spark.sql.sources.partitionOverwriteMode=dynamic) replaces the partitions its rows fall in:
a Lance table is one partition, so rows replace the table and no rows replace nothing, and nothing
is committed. A static overwrite (`INSERT OVERWRITE`, `writeTo(t).overwrite(...)`) replaces the
table whatever its input: with no rows it empties it. pylance reads the versions and rows."""
import lance
import pytest
from pyspark.sql.functions import lit

from conftest import table_path

ROWS = 1000


def _table(spark, warehouse, t):
    spark.sql(f"CREATE TABLE {t} (id BIGINT, s STRING)")
    spark.sql(f"INSERT INTO {t} SELECT id, 'r' || id FROM range({ROWS})")
    return table_path(warehouse, t)


def _state(path):
    """(number of versions, rows) as pylance reads them."""
    dataset = lance.dataset(path)
    return len(dataset.versions()), dataset.count_rows()


@pytest.fixture
def dynamic(spark):
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    yield
    spark.conf.unset("spark.sql.sources.partitionOverwriteMode")


def test_dynamic_overwrite_of_no_rows_commits_nothing(spark, warehouse, table_name):
    path = _table(spark, warehouse, table_name)
    versions, _ = _state(path)
    empty = spark.table(table_name).where("false")
    empty.writeTo(table_name).overwritePartitions()
    assert _state(path) == (versions, ROWS)
    # With rows it replaces the table, in one commit.
    spark.range(5).selectExpr("id", "'new' AS s").writeTo(table_name).overwritePartitions()
    assert _state(path) == (versions + 1, 5)
    assert lance.dataset(path).to_table().column("s").to_pylist() == ["new"] * 5


def test_insert_overwrite_of_no_rows_under_dynamic_mode_commits_nothing(spark, warehouse, table_name, dynamic):
    path = _table(spark, warehouse, table_name)
    versions, _ = _state(path)
    spark.sql(f"INSERT OVERWRITE {table_name} SELECT id, s FROM {table_name} WHERE false")
    assert _state(path) == (versions, ROWS)
    spark.sql(f"INSERT OVERWRITE {table_name} SELECT id, s FROM {table_name} WHERE id < 10")
    assert _state(path) == (versions + 1, 10)


def test_static_overwrite_of_no_rows_empties_the_table(spark, warehouse, table_name):
    path = _table(spark, warehouse, table_name)
    versions, _ = _state(path)
    spark.sql(f"INSERT OVERWRITE {table_name} SELECT id, s FROM {table_name} WHERE false")
    assert _state(path) == (versions + 1, 0)
    spark.sql(f"INSERT INTO {table_name} VALUES (1, 'a')")
    spark.table(table_name).where("false").writeTo(table_name).overwrite(lit(True))
    assert _state(path) == (versions + 3, 0)
