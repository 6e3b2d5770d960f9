"""Randomized differential test of DELETE / UPDATE / MERGE: every statement runs on a sparklance
table and on a DuckDB table; after each, both hold the same rows, and pylance reads them too."""
import random

import duckdb
import lance
import pytest

from conftest import table_path
from dml_generator import random_rows, statement

STATEMENTS_PER_SEED = 40


def _sorted(rows):
    return sorted((tuple(r) for r in rows), key=lambda row: tuple((1, 0) if v is None else (0, v) for v in row))


def _rows_spark(spark, name):
    return _sorted(spark.table(name).collect())


def _rows_duck(con):
    return _sorted(con.execute("SELECT id, a, b, c FROM t").fetchall())


def _rows_lance(path, storage_options=None):
    tbl = lance.dataset(path, storage_options=storage_options).to_table()
    return _sorted(zip(*(tbl.column(c).to_pylist() for c in ["id", "a", "b", "c"])))


def _refresh_source(r, spark, con, next_id):
    # Source rows: some ids of existing target rows, some new; ids are unique.
    ids = sorted(set(r.sample(range(next_id), min(next_id, r.randint(0, 25)))) |
                 set(range(next_id, next_id + r.randint(0, 10))))
    rows = random_rows(r, ids)
    spark.createDataFrame(rows, "id BIGINT, a INT, b STRING, c DOUBLE").createOrReplaceTempView("s")
    con.execute("DROP TABLE IF EXISTS s")
    con.execute("CREATE TABLE s (id BIGINT, a INT, b VARCHAR, c DOUBLE)")
    if rows:
        con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)", rows)
    return next_id + 10


# rewrite_mode auto chooses per fragment between moving updated rows and rewriting the assigned
# columns in place; columns forces the latter for every fragment an UPDATE or MERGE updates.
@pytest.mark.parametrize("seed,mode", [(1, "auto"), (2, "auto"), (3, "columns"), (4, "columns")])
def test_random_dml_matches_duckdb(spark, warehouse, table_name, seed, mode):
    path = table_path(warehouse, table_name)
    run_random_dml(spark, table_name, lambda: _rows_lance(path), seed, mode, STATEMENTS_PER_SEED)


def run_random_dml(spark, table_name, rows_lance, seed, mode, statements):
    """Runs `statements` random statements of `seed` on `table_name` and on DuckDB, checking the
    rows after each, and pylance's (`rows_lance()`, sorted) every 10 and at the end."""
    r = random.Random(seed)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, a INT, b STRING, c DOUBLE) "
              f"TBLPROPERTIES ('max_rows_per_file' = '40', 'rewrite_mode' = '{mode}')")
    initial = random_rows(r, range(150))
    spark.createDataFrame(initial, "id BIGINT, a INT, b STRING, c DOUBLE").coalesce(2).writeTo(table_name).append()
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id BIGINT NOT NULL, a INT, b VARCHAR, c DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", initial)
    next_id = 150

    for i in range(statements):
        if i % 5 == 0:
            next_id = _refresh_source(r, spark, con, next_id)
        template = statement(r)
        spark.sql(template.format(t=table_name, s="s"))
        con.execute(template.format(t="t", s="s"))
        got, want = _rows_spark(spark, table_name), _rows_duck(con)
        assert got == want, f"statement {i}: {template}"
        if i % 10 == 9:
            assert rows_lance() == want, f"pylance after statement {i}: {template}"
    assert rows_lance() == _rows_duck(con)
    in_place = [h.operation_parameters for h in spark.sql(f"SELECT * FROM {table_name}.history").collect()
                if "rows_updated_in_place" in h.operation_parameters]
    assert in_place, f"no statement of {mode} mode updated rows in place"
