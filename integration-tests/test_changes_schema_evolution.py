"""CHANGES across schema changes (issue 32, item 5).

Additive changes (ADD COLUMN, also nested; MERGE WITH SCHEMA EVOLUTION; type widening by ALTER
COLUMN ... TYPE or pylance's alter_columns; pylance's add_columns) do not end the change feed: rows
of every version of the range come in the schema of its end version, NULL where a column did not
exist yet, widened values cast. The oracle computes the change rows from pylance's snapshots of
each version (by stable row id and last-updated version), so it never reads through sparklance.
A range across a DROP or RENAME (or a narrowing cast) fails typed, naming the version and the
column; after a vacuum, a range starting at a removed version is told the first version from
which change data can really be read.
"""
from collections import Counter

import lance
import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException

from conftest import table_path

STABLE = "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '8')"


def _conform(value, arrow_type):
    """A value pylance read at some version, in the shape of the end schema's type: struct children
    the version lacked are None."""
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        return tuple(_conform(value.get(arrow_type.field(i).name), arrow_type.field(i).type)
                     for i in range(arrow_type.num_fields))
    return value


def _from_spark(value):
    """A Spark value in the form _conform gives: structs as tuples."""
    if hasattr(value, "__fields__"):
        return tuple(_from_spark(v) for v in value)
    return value


def _rows_at(path, version):
    """{rowid: ({column: value}, last_updated_version)} of the live rows pylance reads at `version`."""
    ds = lance.dataset(path, version=version)
    cols = ds.schema.names
    tbl = ds.to_table(columns=cols + ["_rowid", "_row_last_updated_at_version"])
    data = {c: tbl.column(c).to_pylist() for c in cols}
    ids = tbl.column("_rowid").to_pylist()
    updated = tbl.column("_row_last_updated_at_version").to_pylist()
    return {rid: ({c: data[c][i] for c in cols}, updated[i]) for i, rid in enumerate(ids)}


def _oracle(path, first, last, compute_updates):
    """The change rows of commits first..last in the schema of version `last`, as
    (*columns, _rowid, _change_type, _commit_version), from pylance snapshots alone."""
    end = lance.dataset(path, version=last).schema
    snaps = {v: _rows_at(path, v) for v in range(max(1, first - 1), last + 1)}

    def row(values, rid, kind, v):
        return tuple(_conform(values.get(f.name), f.type) for f in end) + (rid, kind, v)

    out = Counter()
    for v in range(first, last + 1):
        before, after = snaps.get(v - 1, {}), snaps[v]
        for rid, (values, updated) in after.items():
            if rid not in before:
                out[row(values, rid, "insert", v)] += 1
            elif updated == v:
                pre, post = ("update_preimage", "update_postimage") if compute_updates else ("delete", "insert")
                out[row(before[rid][0], rid, pre, v)] += 1
                out[row(values, rid, post, v)] += 1
        for rid, (values, _) in before.items():
            if rid not in after:
                out[row(values, rid, "delete", v)] += 1
    return out


def _feed(spark, t, first, last, compute_updates):
    opts = " WITH (computeUpdates = 'true')" if compute_updates else ""
    df = spark.sql(f"SELECT * FROM {t} CHANGES FROM VERSION {first} TO VERSION {last}{opts}")
    data = [c for c in df.columns if c not in ("_commit_timestamp",)]
    return df, Counter(tuple(_from_spark(r[c]) for c in data) for r in df.collect())


def _check(spark, t, path, first, last, modes=(False, True)):
    """The feed equals the oracle (with and without computeUpdates); returns the feed's schema."""
    for compute_updates in modes:
        df, got = _feed(spark, t, first, last, compute_updates)
        want = _oracle(path, first, last, compute_updates)
        assert got == want, (first, last, compute_updates, got - want, want - got)
    return df.schema


def _latest(path):
    return lance.dataset(path).version


def test_additive_changes_from_spark_sql_keep_the_feed(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, n INT, f FLOAT, s STRUCT<x: INT>) {STABLE}")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id AS INT), CAST(id / 4 AS FLOAT), named_struct('x', CAST(id AS INT)) "
              "FROM range(20)")
    start = _latest(path)
    spark.sql(f"UPDATE {t} SET n = n + 100 WHERE id < 3")
    spark.sql(f"DELETE FROM {t} WHERE id = 15")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN score DOUBLE")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN s.z BIGINT")
    added = _latest(path)
    spark.sql(f"DELETE FROM {t} WHERE id IN (16, 17)")  # rows written before the columns existed
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN n TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN f TYPE DOUBLE")
    widened = _latest(path)
    spark.sql(f"UPDATE {t} SET score = id * 1.5, n = n * 3000000000 WHERE id BETWEEN 4 AND 6")
    spark.sql(f"INSERT INTO {t} VALUES (100, 5000000000, 0.25, named_struct('x', 7, 'z', 8L), 2.5)")
    spark.sql(f"DELETE FROM {t} WHERE id IN (5, 100)")
    end = _latest(path)

    schema = _check(spark, t, path, start, end)
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields[:5]] == [
        ("id", "bigint"), ("n", "bigint"), ("f", "double"), ("s", "struct<x:int,z:bigint>"), ("score", "double")]
    # A column that changed in the range is nullable in the feed; one that did not keeps NOT NULL.
    assert not schema["id"].nullable and schema["n"].nullable and schema["score"].nullable
    # Ranges ending in the middle serve the schema of their own end.
    _check(spark, t, path, start, added, modes=(True,))
    _check(spark, t, path, added - 1, widened, modes=(False,))
    # A plain read of the struct whose older files lack its added child agrees with pylance.
    s_type = lance.dataset(path).schema.field("s").type
    want = sorted((r["id"], _conform(r["s"], s_type)) for r in lance.dataset(path).to_table(columns=["id", "s"]).to_pylist())
    assert sorted((r.id, _from_spark(r.s)) for r in spark.sql(f"SELECT id, s FROM {t}").collect()) == want
    # Column pruning reads the old files' columns too.
    got = spark.sql(f"SELECT id, score, _change_type FROM {t} CHANGES FROM VERSION {start} TO VERSION {end} "
                    "WHERE _change_type = 'delete' AND id IN (15, 16)").collect()
    assert sorted(tuple(r) for r in got) == [(15, None, "delete"), (16, None, "delete")]


def test_merge_with_schema_evolution_keeps_the_feed(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, n INT, name STRING) {STABLE}")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id AS INT), concat('r', id) FROM range(12)")
    start = _latest(path)
    spark.sql(f"DELETE FROM {t} WHERE id = 0")
    spark.createDataFrame([(3, 3000000000, "three", "x"), (50, 1, "fifty", "y")],
                          "id BIGINT, n BIGINT, name STRING, extra STRING").createOrReplaceTempView("evolve_src")
    spark.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {t} USING evolve_src s ON {t}.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert lance.dataset(path).schema.field("n").type == pa.int64()
    spark.sql(f"DELETE FROM {t} WHERE id IN (1, 50)")
    _check(spark, t, path, start, _latest(path))


def test_pylance_add_columns_and_cast_keep_the_feed(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": pa.array(range(16), pa.int64()), "n": pa.array(range(16), pa.int32())}),
                        path, enable_stable_row_ids=True, max_rows_per_file=6)
    ds = lance.dataset(path)
    ds.delete("id = 2")
    ds.add_columns({"twice": "id * 2"})               # values for every row: each row's last update
    ds.alter_columns({"path": "n", "data_type": pa.int64()})
    ds.add_columns(pa.field("note", pa.string()))     # metadata only
    spark.sql(f"UPDATE {t} SET note = 'seen', n = n + 10000000000 WHERE id % 5 = 0")
    spark.sql(f"DELETE FROM {t} WHERE id IN (3, 10)")
    schema = _check(spark, t, path, 1, _latest(path))
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields[:4]] == [
        ("id", "bigint"), ("n", "bigint"), ("twice", "bigint"), ("note", "string")]


def _schema_error(spark, query):
    with pytest.raises(AnalysisException) as err:
        spark.sql(query).collect()
    return str(err.value)


def test_drop_rename_and_narrowing_end_the_feed_naming_the_version(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, c STRING, d STRING) {STABLE}")
    spark.sql(f"INSERT INTO {t} SELECT id, 'c', 'd' FROM range(6)")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN c")
    dropped = _latest(path)
    spark.sql(f"INSERT INTO {t} SELECT id, 'd' FROM range(6, 9)")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN d TO label")
    renamed = _latest(path)
    spark.sql(f"DELETE FROM {t} WHERE id = 7")

    message = _schema_error(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 2 TO VERSION {dropped}")
    assert f"version {dropped} dropped column 'c'" in message and f"from version {dropped + 1} on" in message, message
    # Across both, the later change is named: it sets where the feed can start.
    message = _schema_error(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 2")
    assert f"version {renamed} renamed column 'd' to 'label'" in message, message
    # After the change the feed works, and before it too.
    _check(spark, t, path, renamed + 1, _latest(path))
    _check(spark, t, path, 1, dropped - 1)

    # pylance narrows a column (a cast Lance allows): rows from before it could not hold their values.
    ds = lance.dataset(path)
    # pylance refuses to cast a column with an index: first the zone map every write keeps on `id`.
    ds.drop_index("id_idx")
    ds.alter_columns({"path": "id", "data_type": pa.int32()})
    message = _schema_error(spark, f"SELECT * FROM {t} CHANGES FROM VERSION {renamed + 1}")
    assert f"version {_latest(path)} changed the type of column 'id' from BIGINT to INT, which is not a widening" \
        in message, message


def test_vacuum_advice_names_the_first_version_that_works(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, c STRING) {STABLE}")
    for i in range(4):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'c')")                             # versions 2..5
    spark.sql(f"CALL lance.system.create_tag(table => '{t}', tag => 'kept', version => 2)")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN c")                                     # version 6
    spark.sql(f"INSERT INTO {t} VALUES (10)")                                       # version 7
    spark.sql(f"INSERT INTO {t} VALUES (11)")                                       # version 8
    spark.sql(f"CALL lance.system.vacuum(table => '{t}', older_than => '0 seconds', retain_versions => 4, "
              "error_if_tagged_old_versions => false)").collect()
    assert [v["version"] for v in lance.dataset(path).versions()] == [2, 5, 6, 7, 8]

    def removed_error(query):
        with pytest.raises((PySparkException, Py4JJavaError)) as err:
            spark.sql(query).collect()
        assert "VersionRemovedException" in str(err.value) or isinstance(err.value, AnalysisException), str(err.value)
        return str(err.value)

    # The oldest version left is the tagged 2, but 3 and 4 are gone and version 6 dropped a column.
    message = removed_error(f"SELECT * FROM {t} CHANGES FROM VERSION 3")
    assert "no longer has version 3" in message and "the oldest version left is 2" in message, message
    assert "can be read from version 7 on (version 6 dropped column 'c')" in message, message
    message = removed_error(f"SELECT * FROM {t} CHANGES FROM VERSION 3 TO VERSION 5")
    assert "no change data up to version 5 can be read any more (versions 3 to 4 are gone too)" in message, message
    # A range whose first commit needs a removed version (4, before 5) is told the same.
    message = removed_error(f"SELECT * FROM {t} CHANGES FROM VERSION 5")
    assert "no longer has version 4" in message and "from version 7 on" in message, message
    _check(spark, t, path, 7, 8)
