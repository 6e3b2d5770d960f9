"""Schema evolution across writers: tables pylance evolved (add_columns with and without data,
drop_columns, alter_columns rename / nullability / type, merge) read identically by Spark, and
DML and compaction from Spark on them read back by pylance; tables Spark evolved with ALTER TABLE
read by pylance, schema and values, with lineage."""
import os

import lance
import pyarrow as pa
import pytest

import sparklance
from conftest import pylance_append_retrying, table_path

FORMATS = ["2.0", "2.2"]


def _pylance(path, columns=None):
    t = lance.dataset(path).to_table(columns=columns)
    return sorted(tuple(r.values()) for r in t.to_pylist())


def _spark(spark, table, columns):
    return sorted(tuple(r) for r in spark.sql(f"SELECT {', '.join(columns)} FROM {table}").collect())


def _evolved_by_pylance(path, version, stable):
    """a int32, b string, s struct<x, y>: three fragments, some rows deleted, then evolved every way pylance can."""
    for i in range(3):
        lance.write_dataset(pa.table({
            "a": pa.array(range(i * 10, i * 10 + 10), pa.int32()),
            "b": [f"b{k}" for k in range(i * 10, i * 10 + 10)],
            "s": [{"x": k, "y": f"y{k}"} for k in range(i * 10, i * 10 + 10)]}),
            path, mode="append" if i else "create", data_storage_version=version, enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.delete("a = 12 or a = 13")
    ds.add_columns({"c": "a * 2"})                                  # a Merge with a data file per fragment
    ds.add_columns(pa.field("n", pa.string()))                      # metadata only
    ds.drop_columns(["b"])
    ds.alter_columns({"path": "c", "name": "c2"}, {"path": "a", "nullable": True})
    ds.alter_columns({"path": "a", "data_type": pa.int64()})         # a new field id, a new file per fragment
    ds.merge(pa.table({"key": pa.array([0, 5, 25], pa.int64()), "m": ["m0", "m5", "m25"]}), "a", "key")
    return lance.dataset(path)


@pytest.mark.parametrize("version", FORMATS)
@pytest.mark.parametrize("stable", [False, True])
def test_spark_reads_and_changes_what_pylance_evolved(spark, warehouse, table_name, version, stable):
    t, path = table_name, table_path(warehouse, table_name)
    ds = _evolved_by_pylance(path, version, stable)
    columns = ["a", "s", "c2", "n", "m"]
    assert [f.name for f in spark.table(t).schema] == [f.name for f in ds.schema] == columns
    expected = [(r[0], (r[1]["x"], r[1]["y"]), *r[2:]) for r in _pylance(path, columns)]
    got = [(r[0], tuple(r[1]), *r[2:]) for r in _spark(spark, t, columns)]
    assert got == expected and len(got) == 28

    spark.sql(f"UPDATE {t} SET n = 'set', c2 = c2 + 1 WHERE a % 4 = 0")
    spark.sql(f"DELETE FROM {t} WHERE a = 7")
    spark.createDataFrame([(5, 0, "merged"), (100, 1, "new")], "a BIGINT, c2 BIGINT, m STRING").createOrReplaceTempView("evo_src")
    # File format 2.0 stores no NULL structs: the inserted row gets one.
    spark.sql(f"MERGE INTO {t} t USING evo_src src ON t.a = src.a WHEN MATCHED THEN UPDATE SET c2 = src.c2, m = src.m "
              "WHEN NOT MATCHED THEN INSERT (a, s, c2, m) VALUES (src.a, named_struct('x', 1, 'y', 'new'), src.c2, src.m)")
    assert _pylance(path, ["a", "c2", "n", "m"]) == _spark(spark, t, ["a", "c2", "n", "m"])
    sparklance.compact(spark, t)
    assert len(lance.dataset(path).get_fragments()) == 1
    after = _pylance(path, ["a", "c2", "n", "m"])
    assert after == _spark(spark, t, ["a", "c2", "n", "m"]) and len(after) == 28
    assert dict((r[0], r[1:]) for r in after)[8] == (17, "set", None)
    if stable:
        lineage = ["a", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
        assert _pylance(path, lineage) == _spark(spark, t, lineage)


@pytest.mark.parametrize("version", FORMATS)
def test_pylance_reads_what_spark_evolved(spark, warehouse, table_name, version):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, s STRUCT<x: INT, y: STRING>, v STRING) "
              f"TBLPROPERTIES ('data_storage_version' = '{version}', 'enable_stable_row_ids' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, named_struct('x', CAST(id AS INT), 'y', concat('y', id)), concat('v', id) "
              "FROM range(20)")
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (score DOUBLE COMMENT 'a score', tags ARRAY<STRING> FIRST)")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO label")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN s.y TO why")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN s.x")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL")
    spark.sql(f"UPDATE {t} SET score = id / 2, tags = array('even') WHERE id % 2 = 0")
    spark.sql(f"INSERT INTO {t} (id, s, label, score) VALUES (100, named_struct('why', 'w'), 'new', 1.5)")
    ds = lance.dataset(path)
    assert ds.schema.names == ["tags", "id", "s", "label", "score"]
    assert [f.name for f in ds.schema.field("s").type] == ["why"]
    assert ds.schema.field("id").nullable and ds.schema.field("score").metadata == {b"comment": b"a score"}
    cols = ["id", "label", "score", "tags", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
    mine = [tuple(r) for r in spark.sql(f"SELECT {', '.join(cols)} FROM {t} ORDER BY id").collect()]
    theirs = sorted(tuple(r.values()) for r in ds.to_table(columns=cols).to_pylist())
    assert [(r[0], r[1], r[2], None if r[3] is None else list(r[3]), *r[4:]) for r in mine] == theirs
    assert len(theirs) == 20
    whys = sorted((r["id"], r["s"]) for r in ds.to_table(columns=["id", "s"]).to_pylist())
    assert whys[:2] == [(0, {"why": "y0"}), (1, {"why": "y1"})] and whys[-1] == (100, {"why": "w"})
    # pylance writes on top of our evolved schema, and we read that.
    lance.write_dataset(pa.table({"id": pa.array([200], pa.int64()), "label": ["py"]}), path, mode="append")
    assert spark.sql(f"SELECT label, score, s FROM {t} WHERE id = 200").collect()[0] == ("py", None, None)


@pytest.mark.parametrize("version", FORMATS)
def test_add_columns_from_python_on_a_pylance_table(spark, warehouse, table_name, version):
    """Column-only writes on a table pylance wrote: only the new columns' bytes are written, and
    pylance reads them (also its take of single rows, which reads the new files at row offsets)."""
    t, path = table_name, table_path(warehouse, table_name)
    for i in range(3):
        lance.write_dataset(pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                                      "payload": [f"p{k}" * 20 for k in range(i * 100, i * 100 + 100)]}),
                            path, mode="append" if i else "create", data_storage_version=version)
    lance.dataset(path).delete("id % 10 = 3")
    before = {f.fragment_id: len(f.data_files()) for f in lance.dataset(path).get_fragments()}
    row = sparklance.add_columns(spark, t, expressions={"half": "id / 2", "flag": "id % 2 = 0"})
    assert list(row.columns) == ["half", "flag"] and row.files_written == 3
    ds = lance.dataset(path)
    assert {f.fragment_id: len(f.data_files()) for f in ds.get_fragments()} == {k: v + 1 for k, v in before.items()}
    # The new files hold two small columns of 100 rows each, far less than the payload.
    assert row.bytes_written < sum(os.path.getsize(os.path.join(path, "data", f.data_files()[0].path))
                                   for f in ds.get_fragments()) / 3
    t_all = ds.to_table(columns=["id", "half", "flag"])
    assert sorted(zip(*(t_all.column(c).to_pylist() for c in ["id", "half", "flag"]))) == \
        sorted((i, i / 2, i % 2 == 0) for i in range(300) if i % 10 != 3)
    taken = ds.take([0, 150, 260], columns=["id", "half"]).to_pylist()
    assert all(r["half"] == r["id"] / 2 for r in taken)


def test_schema_changes_racing_writers_lose_nothing(spark, warehouse, table_name):
    """ADD COLUMN and a type change from Spark race Spark INSERTs and pylance appends: every
    committed row is there with its values (never NULL where a value was written), every added
    column is there, and pylance reads what Spark reads."""
    import threading
    import time
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v INT) TBLPROPERTIES ('optimize_write' = 'false')")
    committed, errors = [], []

    def spark_inserts():
        for i in range(10):
            try:
                spark.sql(f"INSERT INTO {t} (id, v) VALUES ({i}, {i})")
                committed.append(i)
            except Exception as e:  # a retryable conflict fails the statement cleanly
                if "Concurrent commit" not in str(e):
                    errors.append(e)

    def pylance_appends():
        for i in range(100, 110):
            for _ in range(50):
                try:
                    ds = lance.dataset(path)
                    v_type = ds.schema.field("v").type
                    lance.write_dataset(pa.table({"id": pa.array([i], pa.int64()), "v": pa.array([i], v_type)}),
                                        path, mode="append")
                    committed.append(i)
                    break
                except OSError as e:
                    if "conflict" not in str(e).lower() and "schema" not in str(e).lower():
                        errors.append(e)
                        break
                    time.sleep(0.02)

    def alters():
        for k in range(3):
            spark.sql(f"ALTER TABLE {t} ADD COLUMN extra{k} STRING")
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN v TYPE BIGINT")

    threads = [threading.Thread(target=f) for f in (spark_inserts, pylance_appends, alters)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert spark.table(t).columns == ["id", "v", "extra0", "extra1", "extra2"]
    rows = sorted((r.id, r.v) for r in spark.sql(f"SELECT id, v FROM {t}").collect())
    assert rows == sorted((i, i) for i in committed), "a committed value went missing or NULL"
    ds = lance.dataset(path)
    assert str(ds.schema.field("v").type) == "int64"
    assert sorted(zip(*(ds.to_table(columns=["id", "v"]).column(c).to_pylist() for c in ["id", "v"]))) == rows


def test_schema_evolving_merges_race_appends(spark, warehouse, table_name):
    """MERGE WITH SCHEMA EVOLUTION (each adds a column and updates and inserts rows) races Spark
    INSERTs and pylance appends: the column and the rows of a MERGE land together in one version
    or not at all, and every committed row is there with its values, read alike by pylance."""
    import threading
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT) "
              "TBLPROPERTIES ('optimize_write' = 'false', 'isolation_level' = 'snapshot')")
    spark.sql(f"INSERT INTO {t} VALUES (0, 0)")
    expected, merged, failed, errors = {0: 0}, [], [], []
    lock = threading.Lock()

    def merges():
        for k in range(4):
            src = spark.createDataFrame([(0, k + 1, f"c{k}")] + [(1000 * (k + 1) + j, j, f"c{k}") for j in range(3)],
                                        f"id bigint, v bigint, col{k} string")
            src.createOrReplaceTempView(f"evo_src_{k}")
            try:
                spark.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {t} t USING evo_src_{k} s ON t.id = s.id "
                          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
                with lock:
                    merged.append(k)
                    expected.update({0: k + 1, **{1000 * (k + 1) + j: j for j in range(3)}})
            except Exception as e:  # a retryable conflict fails the statement and changes nothing
                if not any(c in str(e) for c in ("LANCE_CONCURRENT_COMMIT_CONFLICT", "CommitConflictException", "conflicts with")):
                    errors.append(e)
                failed.append(k)

    def spark_inserts():
        for i in range(1, 9):
            try:
                spark.sql(f"INSERT INTO {t} (id, v) VALUES ({i}, {i})")
                with lock:
                    expected[i] = i
            except Exception as e:
                if "conflicts with" not in str(e):
                    errors.append(e)

    def pylance_appends():
        for i in range(100, 108):
            if pylance_append_retrying(path, pa.table({"id": pa.array([i], pa.int64()), "v": pa.array([i], pa.int64())}), errors):
                with lock:
                    expected[i] = i

    threads = [threading.Thread(target=f) for f in (merges, spark_inserts, pylance_appends)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert merged, "no schema-evolving MERGE landed"
    assert spark.table(t).columns == ["id", "v"] + [f"col{k}" for k in sorted(merged)], (merged, failed)
    rows = sorted((r.id, r.v) for r in spark.sql(f"SELECT id, v FROM {t}").collect())
    assert rows == sorted(expected.items())
    for k in merged:  # a merge's column holds its values exactly in the rows it wrote last
        got = {r.id for r in spark.sql(f"SELECT id FROM {t} WHERE col{k} = 'c{k}'").collect()}
        assert {1000 * (k + 1) + j for j in range(3)} <= got <= {1000 * (k + 1) + j for j in range(3)} | {0}
    ds = lance.dataset(path)
    assert ds.schema.names == spark.table(t).columns
    assert sorted(zip(*(ds.to_table(columns=["id", "v"]).column(c).to_pylist() for c in ["id", "v"]))) == rows


@pytest.mark.parametrize("version", FORMATS)
def test_spark_reads_pylance_column_rewrites(spark, warehouse, table_name, version):
    """pylance 14's in-place column update (LanceFragment.update_columns committed as an Update with
    update_mode rewrite_columns): the old file keeps its place with a -2 tombstone for the column, a
    new file holds the column for every row. Spark reads it, changes it, compacts it."""
    from lance import LanceOperation
    t, path = table_name, table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()), "a": pa.array(range(10), pa.int32()),
                                  "b": [f"b{i}" for i in range(10)]}), path, data_storage_version=version)
    lance.dataset(path).delete("id = 3")
    ds = lance.dataset(path)
    updated, modified = ds.get_fragment(0).update_columns(
        pa.table({"id": pa.array([1, 2, 5], pa.int64()), "a": pa.array([100, 200, 500], pa.int32())}), left_on="id", right_on="id")
    ds = lance.LanceDataset.commit(path, LanceOperation.Update(updated_fragments=[updated], fields_modified=modified,
                                                               update_mode="rewrite_columns"), read_version=ds.version)
    assert [f.fields for f in ds.get_fragment(0).data_files()] == [[0, -2, 2], [1]]
    expected = sorted((i, {1: 100, 2: 200, 5: 500}.get(i, i), f"b{i}") for i in range(10) if i != 3)
    assert _spark(spark, t, ["id", "a", "b"]) == expected == _pylance(path, ["id", "a", "b"])
    spark.sql(f"UPDATE {t} SET a = a + 1 WHERE id IN (2, 4)")
    sparklance.compact(spark, t, materialize_deletions_threshold=0.0)
    after = sorted((i, a + (1 if i in (2, 4) else 0), b) for i, a, b in expected)
    assert _spark(spark, t, ["id", "a", "b"]) == after == _pylance(path, ["id", "a", "b"])


def test_update_columns_from_python_pylance_reads(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, score DOUBLE, label STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, id / 4, concat('l', id) FROM range(50)")
    spark.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    ids_before = sorted(tuple(r) for r in spark.sql(f"SELECT id, _rowid, _rowaddr FROM {t}").collect())
    row = sparklance.update_columns(spark, t, expressions={"score": "score * 2"})
    assert list(row.columns) == ["score"]
    ds = lance.dataset(path)
    assert sorted(zip(*(ds.to_table(columns=["id", "score", "label"]).column(c).to_pylist() for c in ["id", "score", "label"]))) == \
        sorted((i, i / 2, f"l{i}") for i in range(50) if i % 7)
    tbl = ds.to_table(columns=["id", "_rowid", "_rowaddr", "_row_last_updated_at_version"])
    assert sorted(zip(*(tbl.column(c).to_pylist() for c in ["id", "_rowid", "_rowaddr"]))) == ids_before
    assert set(tbl.column("_row_last_updated_at_version").to_pylist()) == {ds.version}
