"""Column DEFAULT values (issue 36): declared in SQL, applied by Spark's INSERT / UPDATE / MERGE and by
PySpark writes, kept in the Lance field metadata through pylance's own writes, written into existing
rows by ADD COLUMN ... DEFAULT, and what a pylance append that omits such a column does. DuckDB is the
oracle for a few statements."""
import duckdb
import lance
import pyarrow as pa
import pytest

from conftest import table_path

CURRENT, EXISTS = b"spark.default.current", b"spark.default.exists"


def _meta(path, column):
    return lance.dataset(path).schema.field(column).metadata or {}


def _rows(spark, table, columns="id, qty, tag"):
    return [tuple(r) for r in spark.sql(f"SELECT {columns} FROM {table} ORDER BY id").collect()]


def test_defaults_survive_pylance_writes_and_agree_with_duckdb(spark, warehouse, table_name):
    ddl = "(id BIGINT NOT NULL, qty INT DEFAULT 5, tag STRING DEFAULT 'new')"
    statements = [
        "INSERT INTO {t} (id) VALUES (1), (2)",
        "INSERT INTO {t} VALUES (3, DEFAULT, 'x')",
        "INSERT INTO {t} (id, qty) VALUES (4, 40)",
        "UPDATE {t} SET qty = DEFAULT, tag = 'u' WHERE id = 4",
        "UPDATE {t} SET tag = DEFAULT WHERE id = 3",
    ]
    spark.sql(f"CREATE TABLE {table_name} {ddl}")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t {ddl.replace('STRING', 'VARCHAR')}")
    for s in statements:
        spark.sql(s.format(t=table_name))
        con.execute(s.format(t="t"))
    expected = con.execute("SELECT id, qty, tag FROM t ORDER BY id").fetchall()
    assert _rows(spark, table_name) == expected == [(1, 5, "new"), (2, 5, "new"), (3, 5, "new"), (4, 5, "u")]
    path = table_path(warehouse, table_name)
    assert lance.dataset(path).to_table().sort_by("id").column("qty").to_pylist() == [5, 5, 5, 5]
    assert _meta(path, "qty") == {CURRENT: b"5", EXISTS: b"5"}

    # pylance's own writes keep the field metadata, so Spark keeps applying the default after each.
    ds = lance.dataset(path)
    lance.write_dataset(pa.table({"id": pa.array([10], pa.int64()), "qty": pa.array([1], pa.int32()), "tag": ["p"]}),
                        path, mode="append")
    lance.dataset(path).delete("id = 10")
    lance.dataset(path).update({"tag": "'v'"}, where="id = 1")
    lance.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        pa.table({"id": pa.array([2, 11], pa.int64()), "qty": pa.array([2, 11], pa.int32()), "tag": ["m", "n"]}))
    lance.dataset(path).optimize.compact_files()
    lance.dataset(path).add_columns({"twice": "id * 2"})
    assert lance.dataset(path).version > ds.version + 5
    assert _meta(path, "qty") == {CURRENT: b"5", EXISTS: b"5"} and _meta(path, "tag")[CURRENT] == b"'new'"
    spark.sql(f"INSERT INTO {table_name} (id, twice) VALUES (12, 0)")
    assert _rows(spark, table_name + " WHERE id = 12") == [(12, 5, "new")]

    # A DataFrame written by name without the column gets the default too.
    spark.createDataFrame([(13, 26)], "id BIGINT, twice BIGINT").writeTo(table_name).append()
    assert _rows(spark, table_name + " WHERE id = 13") == [(13, 5, "new")]

    # Like comments, defaults travel with columns read from the table: CTAS keeps them.
    spark.sql(f"CREATE TABLE {table_name}_copy AS SELECT * FROM {table_name}")
    assert _meta(table_path(warehouse, table_name + "_copy"), "qty") == {CURRENT: b"5", EXISTS: b"5"}


def test_pylance_append_without_the_column_writes_null_unless_it_is_not_null(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, qty INT DEFAULT 5, must INT NOT NULL DEFAULT 1)")
    spark.sql(f"INSERT INTO {table_name} (id) VALUES (1)")
    path = table_path(warehouse, table_name)
    # pylance knows nothing of Spark's defaults: a nullable column it is not given is left out of the
    # new fragment's files and reads NULL, in pylance and in Spark alike ...
    lance.write_dataset(pa.table({"id": pa.array([2], pa.int64()), "must": pa.array([7], pa.int32())}), path, mode="append")
    assert lance.dataset(path).to_table().sort_by("id").column("qty").to_pylist() == [5, None]
    assert _rows(spark, table_name, "id, qty, must") == [(1, 5, 1), (2, None, 7)]
    # ... and a NOT NULL one must be given: pylance refuses the append, so such a column never misses its value.
    with pytest.raises(OSError, match="missing=\\[must\\]"):
        lance.write_dataset(pa.table({"id": pa.array([3], pa.int64())}), path, mode="append")
    assert lance.dataset(path).count_rows() == 2


def test_add_column_default_fills_existing_rows_and_a_concurrent_append_retries(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL)")
    spark.sql(f"INSERT INTO {table_name} VALUES (1), (2)")
    spark.sql(f"INSERT INTO {table_name} VALUES (3)")
    path = table_path(warehouse, table_name)
    before = lance.dataset(path)
    files = {f.fragment_id: [d.path for d in f.data_files()] for f in before.get_fragments()}
    # A pylance writer that read the table before the ALTER prepares an append of rows without the column.
    fragment = lance.fragment.LanceFragment.create(path, pa.table({"id": pa.array([9], pa.int64())},
                                                                  schema=before.schema))

    spark.sql(f"ALTER TABLE {table_name} ADD COLUMN qty INT DEFAULT 7")
    after = lance.dataset(path)
    assert after.to_table().sort_by("id").column("qty").to_pylist() == [7, 7, 7]
    assert _meta(path, "qty") == {CURRENT: b"7", EXISTS: b"7"}
    # Only a file of the new column was added to each fragment; the old files are untouched.
    for f in after.get_fragments():
        data = [d.path for d in f.data_files()]
        assert data[:-1] == files[f.fragment_id] and len(data) == len(files[f.fragment_id]) + 1
    assert after.validate() is None

    # Its commit on the version it read would add rows reading NULL in qty: Lance refuses it for retry.
    with pytest.raises(OSError, match="(?i)retry|conflict"):
        lance.LanceDataset.commit(path, lance.LanceOperation.Append([fragment]), read_version=before.version)
    assert lance.dataset(path).count_rows("qty IS NULL") == 0
