"""Generated columns (issue 36): computed by PySpark writes that leave them out, refused when given
another value, kept in the Lance field metadata; pylance reads the computed values. Python's own
date arithmetic is the oracle for the expected rows."""
import datetime as dt

import lance
import pytest
from pyspark.errors import PySparkException

from conftest import table_path


def test_generated_columns_are_computed_checked_and_read_back_by_pylance(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, ts TIMESTAMP, "
              "day DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), tag STRING, up STRING GENERATED ALWAYS AS (upper(tag)))")
    given = {1: (dt.datetime(2026, 3, 1, 10), "a"), 2: (dt.datetime(2026, 3, 2, 23, 59, 59), "b"),
             3: (dt.datetime(2026, 3, 3, 0, 0), "c")}
    spark.sql(f"INSERT INTO {table_name} (id, ts, tag) VALUES (1, TIMESTAMP'2026-03-01 10:00:00', 'a')")
    spark.sql(f"INSERT INTO {table_name} VALUES (2, TIMESTAMP'2026-03-02 23:59:59', NULL, 'b', NULL)")
    spark.createDataFrame([(3, given[3][0], "c")], "id BIGINT, ts TIMESTAMP, tag STRING").writeTo(table_name).append()
    with pytest.raises(PySparkException, match="generated_day"):
        spark.sql(f"INSERT INTO {table_name} VALUES (4, TIMESTAMP'2026-03-04 00:00:00', DATE'2020-01-01', 'd', 'D')")
    spark.sql(f"UPDATE {table_name} SET ts = TIMESTAMP'2027-01-01 00:00:00' WHERE id = 1")
    given[1] = (dt.datetime(2027, 1, 1), "a")

    expected = [{"id": i, "day": ts.date(), "up": tag.upper()} for i, (ts, tag) in sorted(given.items())]
    assert [r.asDict() for r in spark.sql(f"SELECT id, day, up FROM {table_name} ORDER BY id").collect()] == expected
    ds = lance.dataset(table_path(warehouse, table_name))
    assert sorted(ds.to_table(columns=["id", "day", "up"]).to_pylist(), key=lambda r: r["id"]) == expected
    assert ds.schema.field("day").metadata[b"spark.generation_expression"] == b"CAST(ts AS DATE)"
    assert ds.schema.field("up").metadata[b"spark.generation_expression"] == b"upper(tag)"
