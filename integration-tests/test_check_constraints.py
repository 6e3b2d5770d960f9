"""CHECK constraints (issue 36): declared in CREATE TABLE or added with ALTER TABLE (existing rows
counted), enforced by Spark on every PySpark write, kept in the Lance table config through
pylance's own writes, and what pylance's unchecked appends do. DuckDB, which enforces CHECK
constraints itself, is the oracle for which statements are refused and for the rows left."""
import json

import duckdb
import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from conftest import table_path

KEY = "sparklance.constraint.non_negative"


def _rows(spark, table):
    return [tuple(r) for r in spark.sql(f"SELECT id, balance FROM {table} ORDER BY id").collect()]


def _condition(e):
    return e.getCondition() if hasattr(e, "getCondition") else None


def test_writes_are_checked_like_duckdb_and_pylance_reads_the_rows(spark, warehouse, table_name):
    ddl = "(id BIGINT NOT NULL, balance INT, CONSTRAINT non_negative CHECK (balance >= 0))"
    statements = [
        ("INSERT INTO {t} VALUES (1, 10), (2, 0), (3, NULL)", True),
        ("INSERT INTO {t} VALUES (4, -1)", False),
        ("UPDATE {t} SET balance = balance - 5 WHERE id <= 2", False),
        ("UPDATE {t} SET balance = balance + 5 WHERE id <= 2", True),
        ("INSERT INTO {t} VALUES (5, 7), (6, -7)", False),
        ("DELETE FROM {t} WHERE id = 3", True),
    ]
    spark.sql(f"CREATE TABLE {table_name} {ddl}")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t {ddl}")
    for statement, lands in statements:
        duck_ok = spark_ok = True
        try:
            con.execute(statement.format(t="t"))
        except duckdb.ConstraintException:
            duck_ok = False
        try:
            spark.sql(statement.format(t=table_name))
        except PySparkException as e:
            assert _condition(e) == "CHECK_CONSTRAINT_VIOLATION" and "non_negative" in str(e), e
            spark_ok = False
        assert spark_ok == duck_ok == lands, statement
    expected = con.execute("SELECT id, balance FROM t ORDER BY id").fetchall()
    assert _rows(spark, table_name) == expected == [(1, 15), (2, 5)]

    # A DataFrame append with a violating row writes nothing either.
    version = lance.dataset(table_path(warehouse, table_name)).version
    with pytest.raises(PySparkException, match="non_negative"):
        spark.createDataFrame([(7, 1), (8, -8)], "id BIGINT, balance INT").writeTo(table_name).append()
    path = table_path(warehouse, table_name)
    ds = lance.dataset(path)
    assert ds.version == version
    assert sorted(ds.to_table().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "balance": 15}, {"id": 2, "balance": 5}]
    assert json.loads(ds.config()[KEY]) == {"check": "balance >= 0", "rely": False}


def test_add_constraint_counts_rows_pylance_keeps_it_and_its_appends_are_unchecked(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, balance INT)")
    spark.sql(f"INSERT INTO {table_name} VALUES (1, 10), (2, -1), (3, -2)")
    path = table_path(warehouse, table_name)
    version = lance.dataset(path).version
    with pytest.raises(PySparkException) as refused:
        spark.sql(f"ALTER TABLE {table_name} ADD CONSTRAINT non_negative CHECK (balance >= 0)")
    assert _condition(refused.value) == "LANCE_CHECK_CONSTRAINT_VIOLATED"
    assert "2 row(s)" in str(refused.value) and "non_negative" in str(refused.value)
    assert lance.dataset(path).version == version and KEY not in lance.dataset(path).config()

    spark.sql(f"DELETE FROM {table_name} WHERE balance < 0")
    spark.sql(f"ALTER TABLE {table_name} ADD CONSTRAINT non_negative CHECK (balance >= 0)")
    assert KEY in lance.dataset(path).config()

    # pylance's writes keep the config entry; its append is not checked.
    lance.write_dataset(pa.table({"id": pa.array([4], pa.int64()), "balance": pa.array([-7], pa.int32())},
                        schema=lance.dataset(path).schema), path, mode="append")
    lance.dataset(path).delete("id = 1")
    lance.dataset(path).optimize.compact_files()
    assert json.loads(lance.dataset(path).config()[KEY]) == {"check": "balance >= 0", "rely": False}
    assert _rows(spark, table_name) == [(4, -7)]
    with pytest.raises(PySparkException, match="non_negative"):
        spark.sql(f"INSERT INTO {table_name} VALUES (5, -5)")
    spark.sql(f"INSERT INTO {table_name} VALUES (5, 5)")
    assert _rows(spark, table_name) == [(4, -7), (5, 5)]

    spark.sql(f"ALTER TABLE {table_name} DROP CONSTRAINT non_negative")
    assert KEY not in lance.dataset(path).config()
    spark.sql(f"INSERT INTO {table_name} VALUES (6, -6)")
    assert lance.dataset(path).count_rows("balance < 0") == 2
