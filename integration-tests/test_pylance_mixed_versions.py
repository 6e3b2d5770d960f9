"""Tables whose data files pylance wrote in more than one file format version (feature flag 256),
and tables of the legacy V1 format, read and changed from Spark and checked by pylance.
Facts: docs/format-mixed-versions.md, docs/format-v1-files.md."""
import lance
import pyarrow as pa
import pytest

from conftest import table_path
from sparklance_testing import feature_flags

MIXED = 256


def _rows(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in ids]),
        "d": pa.array([i / 4 for i in ids], pa.float64()),
        "arr": pa.array([[i, i + 1] if i % 5 else [] for i in ids], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": f"y{i % 3}"} for i in ids], pa.struct([("x", pa.int64()), ("y", pa.string())])),
    })


def _file_versions(ds):
    return {frag.fragment_id: [f"{f.file_major_version}.{f.file_minor_version}" for f in frag.data_files()]
            for frag in ds.get_fragments()}


def _spark_rows(spark, name):
    return {r["id"]: (r["s"], r["d"], list(r["arr"]), (r["st"]["x"], r["st"]["y"]))
            for r in spark.table(name).collect()}


def _lance_rows(ds):
    return {r["id"]: (r["s"], r["d"], r["arr"], (r["st"]["x"], r["st"]["y"])) for r in ds.to_table().to_pylist()}


def _dml(spark, name):
    """The same changes on every table; returns what the rows must be afterwards, from the rows before."""
    before = _spark_rows(spark, name)
    spark.sql(f"INSERT INTO {name} SELECT id + 10000, s, d, arr, st FROM {name} WHERE id < 3")
    spark.sql(f"UPDATE {name} SET s = 'upd', d = -1.0 WHERE id % 10 = 3")
    spark.sql(f"DELETE FROM {name} WHERE id % 10 = 4")
    spark.sql(f"""MERGE INTO {name} t USING (SELECT id, CAST(id AS STRING) AS s FROM range(95, 105)) src ON t.id = src.id
        WHEN MATCHED THEN UPDATE SET s = concat('m', src.s)
        WHEN NOT MATCHED THEN INSERT (id, s, d, arr, st) VALUES (src.id, src.s, 0.5, array(1), named_struct('x', src.id, 'y', 'new'))""")
    want = dict(before)
    for i in range(3):
        want[i + 10000] = before[i]
    for i, (s, d, arr, st) in before.items():
        if i % 10 == 3:
            want[i] = ("upd", -1.0, arr, st)
    for i in before:
        if i % 10 == 4:
            del want[i]
    for i in range(95, 105):
        if i in want:
            want[i] = (f"m{i}",) + want[i][1:]
        elif i not in before:
            want[i] = (str(i), 0.5, [1], (i, "new"))
    return want


@pytest.mark.parametrize("first,then", [("2.0", "2.1"), ("2.1", "2.2"), ("2.2", "2.0")])
def test_mixed_versions_read_and_changed_by_spark(spark, warehouse, table_name, first, then):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_rows(0, 60), path, data_storage_version=first)
    lance.write_dataset(_rows(60, 100), path, mode="append", data_storage_version=then)
    assert feature_flags(path) == (MIXED, MIXED)
    ds = lance.dataset(path)
    assert _spark_rows(spark, table_name) == _lance_rows(ds)
    assert spark.sql(f"SELECT count(*) FROM {table_name} WHERE st.x >= 60").collect()[0][0] == 40

    want = _dml(spark, table_name)
    ds = lance.dataset(path)
    ds.validate()
    assert ds.data_storage_version == first
    assert _lance_rows(ds) == want == _spark_rows(spark, table_name)
    # The flag stays, pylance's files keep their versions, and every file Spark wrote has the table's version.
    assert feature_flags(path)[0] & MIXED and feature_flags(path)[1] & MIXED
    versions = _file_versions(ds)
    assert versions[1][0] == then
    assert all(v == first for frag, fs in versions.items() for v in (fs[1:] if frag == 1 else fs))
    # pylance goes on writing the table after Spark.
    lance.write_dataset(_rows(200, 210), path, mode="append")
    assert lance.dataset(path).count_rows() == len(want) + 10


def test_struct_rewritten_in_place_over_a_2_0_file(spark, warehouse, table_name):
    """A struct's values are where its leaves are: a 2.1 column file of a struct rewritten in place
    lists only the leaves, and the fragment's 2.0 file keeps listing the struct's own id."""
    path = table_path(warehouse, table_name)
    lance.write_dataset(_rows(0, 20), path, data_storage_version="2.1")
    lance.write_dataset(_rows(20, 40), path, mode="append", data_storage_version="2.0")
    before = _spark_rows(spark, table_name)
    spark.sql("SET spark.sparklance.rewrite_mode = columns")
    try:
        spark.sql(f"UPDATE {table_name} SET st.x = st.x + 1000, st.y = 'z' WHERE id % 2 = 0")
    finally:
        spark.sql("RESET spark.sparklance.rewrite_mode")
    ds = lance.dataset(path)
    ds.validate()
    assert _file_versions(ds)[1] == ["2.0", "2.1"]  # updated in place, over the 2.0 file
    want = {i: (s, d, arr, (st[0] + 1000, "z") if i % 2 == 0 else st) for i, (s, d, arr, st) in before.items()}
    assert _lance_rows(ds) == want == _spark_rows(spark, table_name)


def _legacy_table(path):
    """A table as older LanceDB wrote them: legacy (V1) files, two fragments of several batches."""
    lance.write_dataset(_rows(0, 60), path, data_storage_version="legacy", max_rows_per_group=16)
    lance.write_dataset(_rows(60, 100), path, mode="append", max_rows_per_group=16)
    ds = lance.dataset(path)
    assert ds.data_storage_version == "0.1"
    assert {v for fs in _file_versions(ds).values() for v in fs} == {"0.2"}
    return ds


def test_legacy_v1_table_read_by_spark(spark, warehouse, table_name):
    ds = _legacy_table(table_path(warehouse, table_name))
    # V1 keeps no nulls but those of strings (an empty string reads as null): Spark sees what pylance sees.
    assert _spark_rows(spark, table_name) == _lance_rows(ds)
    assert spark.sql(f"SELECT count(*), sum(st.x), max(size(arr)) FROM {table_name} WHERE s IS NULL").collect()[0][:] == \
        (15, sum(i for i in range(100) if i % 7 == 0), 2)
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table_name}").collect()}
    assert props["data_storage_version"] == "0.1"


def test_legacy_v1_table_changed_by_spark(spark, warehouse, table_name):
    """DML writes V1 files into a legacy table, as pylance 14 does (it never mixes V1 and 2.x)."""
    path = table_path(warehouse, table_name)
    _legacy_table(path)
    want = _dml(spark, table_name)
    ds = lance.dataset(path)
    ds.validate()
    assert ds.data_storage_version == "0.1"
    assert _lance_rows(ds) == want == _spark_rows(spark, table_name)
    assert {v for fs in _file_versions(ds).values() for v in fs} == {"0.2"}
    assert feature_flags(path)[0] & MIXED == 0
    with pytest.raises(Exception, match="legacy \\(V1\\) table cannot take a column of NULLs"):
        spark.sql(f"ALTER TABLE {table_name} ADD COLUMN extra INT")
    # pylance goes on writing the table after Spark, in V1.
    lance.write_dataset(_rows(200, 210), path, mode="append")
    ds = lance.dataset(path)
    assert ds.count_rows() == len(want) + 10
    assert {v for fs in _file_versions(ds).values() for v in fs} == {"0.2"}


def test_spark_creates_a_legacy_table(spark, warehouse, table_name):
    spark.sql(f"""CREATE TABLE {table_name} (id BIGINT NOT NULL, s STRING, d DOUBLE, arr ARRAY<INT>,
        st STRUCT<x: BIGINT, y: STRING>) TBLPROPERTIES ('data_storage_version' = 'legacy')""")
    spark.sql(f"""INSERT INTO {table_name} SELECT id, IF(id % 7 = 0, NULL, concat('s', id)), id / 4,
        IF(id % 5 = 0, array(), array(CAST(id AS INT), CAST(id + 1 AS INT))), named_struct('x', id, 'y', concat('y', id % 3))
        FROM range(3000)""")
    ds = lance.dataset(table_path(warehouse, table_name))
    assert ds.data_storage_version == "0.1"
    assert {v for fs in _file_versions(ds).values() for v in fs} == {"0.2"}
    ds.validate()
    want = {i: (None if i % 7 == 0 else f"s{i}", i / 4, [] if i % 5 == 0 else [i, i + 1], (i, f"y{i % 3}"))
            for i in range(3000)}
    assert _lance_rows(ds) == _spark_rows(spark, table_name) == want
    assert ds.take([0, 2999]).num_rows == 2
