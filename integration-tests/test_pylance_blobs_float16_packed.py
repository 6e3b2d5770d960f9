"""Tables pylance 14.0.2 writes with blob kinds and types Spark read but could not keep or write:
external blobs (descriptor kind 3, read through the table's storage; UPDATE / MERGE that leave the
blob column alone keep every descriptor exactly), float16 and float16 vectors, packed structs, and
2.1 blobs (blob v1), changed from Spark and checked with pylance (issue 31 items 1, 5, 7)."""
import hashlib

import lance
import pyarrow as pa
import pytest

from conftest import table_path


def _descriptors(path, column="b"):
    """{id: descriptor dict or None} as pylance's scan of a blob v2 column returns them."""
    t = lance.dataset(path).to_table(columns=["id", column])
    return dict(zip(t.column("id").to_pylist(), t.column(column).to_pylist()))


def _take_blobs(path, column="b"):
    """{id: bytes or None} as pylance's take_blobs reads them."""
    ds = lance.dataset(path)
    ids = ds.to_table(columns=["id"], with_row_address=True)
    blobs = ds.take_blobs(column, addresses=ids.column("_rowaddr").to_pylist())
    return {i: None if b is None else b.read() for i, b in zip(ids.column("id").to_pylist(), blobs)}


@pytest.fixture
def external_blobs(tmp_path, warehouse, table_name):
    """A 2.2 table of rows whose blobs are whole external objects (kind 3, position 0, size 0),
    external ranges, inline bytes and NULL; returns its path and {id: bytes or None}."""
    objects = []
    for i in range(3):
        p = tmp_path / f"object{i}.bin"
        p.write_bytes(bytes([65 + i]) * (1000 + 7 * i))
        objects.append(f"file://{p}")
    values = [objects[0], objects[1], lance.Blob.from_uri(objects[2], 10, 25), b"inline bytes", None, b""]
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": list(range(6)), "n": [0] * 6, "b": lance.blob_array(values)}), path,
                        data_storage_version="2.2", allow_external_blob_outside_bases=True)
    expected = {0: b"A" * 1000, 1: b"B" * 1007, 2: (b"C" * 1014)[10:35], 3: b"inline bytes", 4: None, 5: b""}
    assert _take_blobs(path) == expected
    kinds = {i: (d["kind"], d["position"], d["size"]) if d else None for i, d in _descriptors(path).items()}
    assert kinds[0] == (3, 0, 0) and kinds[2] == (3, 10, 25) and kinds[3] == (0, 0, 12), kinds
    return path, expected


def _spark_bytes(spark, table):
    return {r.id: None if r.b is None else bytes(r.b) for r in spark.sql(f"SELECT id, b FROM {table}").collect()}


def test_external_blobs_read_through_the_tables_storage(spark, table_name, external_blobs):
    path, expected = external_blobs
    assert _spark_bytes(spark, table_name) == expected
    (row,) = spark.sql(f"SELECT length(b) AS n FROM {table_name} WHERE id = 0").collect()
    assert row.n == 1000


def test_update_and_merge_keep_external_blob_descriptors(spark, table_name, external_blobs):
    """UPDATE and MERGE of another column leave each row's blob descriptor as pylance wrote it; a
    MERGE that inserts rows adds theirs; DELETE removes rows; pylance reads and validates it all."""
    path, expected = external_blobs
    before = _descriptors(path)
    spark.sql(f"UPDATE {table_name} SET n = n + 1 WHERE id IN (0, 2, 4)")
    spark.createDataFrame([(1, 7, None), (3, 8, None), (9, 9, b"new")], "id BIGINT, n BIGINT, b BINARY") \
        .createOrReplaceTempView("blob_src")
    spark.sql(f"MERGE INTO {table_name} t USING blob_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT *")
    after = _descriptors(path)
    assert {i: after[i] for i in before} == before
    assert _take_blobs(path) == {**expected, 9: b"new"}
    assert {r.id: r.n for r in spark.sql(f"SELECT id, n FROM {table_name}").collect()} == \
        {0: 1, 1: 7, 2: 1, 3: 8, 4: 1, 5: 0, 9: 9}
    spark.sql(f"DELETE FROM {table_name} WHERE id = 1")
    want = {i: v for i, v in {**expected, 9: b"new"}.items() if i != 1}
    assert _take_blobs(path) == want and _spark_bytes(spark, table_name) == want
    lance.dataset(path).validate()


# ---- Blobs relative to a registered base path (feature flag 16) ----

@pytest.fixture
def based_blobs(tmp_path, warehouse, table_name):
    """A 2.2 table registering base path 1 (`initial_bases`): external blobs under it stored relative
    to it (kind 3, blob id 1), whole and ranged, beside an absolute one, inline bytes and NULL;
    returns its path and {id: bytes or None}."""
    store = tmp_path / "store"
    (store / "sub").mkdir(parents=True)
    for i in range(2):
        (store / "sub" / f"x{i}.bin").write_bytes(bytes([65 + i]) * (300 + i))
    (tmp_path / "outside.bin").write_bytes(b"Z" * 40)
    values = [f"file://{store}/sub/x0.bin", str(store / "sub" / "x1.bin"),
              lance.Blob.from_uri(f"file://{store}/sub/x1.bin", 10, 20), f"file://{tmp_path}/outside.bin",
              b"inline", None]
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": list(range(6)), "n": [0] * 6, "b": lance.blob_array(values)}), path,
                        data_storage_version="2.2", initial_bases=[lance.DatasetBasePath(str(store), name="store", id=1)],
                        allow_external_blob_outside_bases=True)
    descriptors = _descriptors(path)
    assert [(d["kind"], d["blob_id"], d["blob_uri"]) for d in list(descriptors.values())[:3]] == \
        [(3, 1, "sub/x0.bin"), (3, 1, "sub/x1.bin"), (3, 1, "sub/x1.bin")]
    assert descriptors[3]["blob_id"] == 0  # outside every base: absolute
    expected = {0: b"A" * 300, 1: b"B" * 301, 2: b"B" * 20, 3: b"Z" * 40, 4: b"inline", 5: None}
    assert _take_blobs(path) == expected
    return path, expected


def test_external_blobs_relative_to_a_base_path_read_update_merge_delete(spark, table_name, based_blobs):
    path, expected = based_blobs
    assert _spark_bytes(spark, table_name) == expected
    before = _descriptors(path)
    spark.sql(f"UPDATE {table_name} SET n = n + 1 WHERE id IN (0, 2)")
    spark.createDataFrame([(1, 7, None), (9, 9, b"new")], "id BIGINT, n BIGINT, b BINARY") \
        .createOrReplaceTempView("based_src")
    spark.sql(f"MERGE INTO {table_name} t USING based_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT *")
    after = _descriptors(path)
    assert {i: after[i] for i in before} == before
    spark.sql(f"DELETE FROM {table_name} WHERE id = 3")
    want = {i: v for i, v in {**expected, 9: b"new"}.items() if i != 3}
    assert _take_blobs(path) == want and _spark_bytes(spark, table_name) == want
    assert {r.id: r.n for r in spark.sql(f"SELECT id, n FROM {table_name}").collect()} == \
        {0: 1, 1: 7, 2: 1, 4: 0, 5: 0, 9: 9}
    lance.dataset(path).validate()


def test_managed_blobs_relative_to_a_base_path_read(spark, tmp_path, warehouse, table_name):
    """pylance 14 stores a managed blob given a `base_id` as descriptor kind 5 (not 4), its URI
    relative to that base's own path, whether the base is a dataset root or not."""
    from sparklance_testing import feature_flags
    plain, root = tmp_path / "plain", tmp_path / "root"
    for d, byte in ((plain, 1), (root, 2)):
        d.mkdir()
        (d / "m.blob").write_bytes(bytes(range(byte, byte + 100)))
    builder = lance.BlobDescriptorArrayBuilder("b")
    builder.append_managed("m.blob", 5, 10, base_id=1)
    builder.append_managed("m.blob", 50, 3, base_id=2)
    builder.append_managed("m.blob", 0, 0, base_id=1)
    builder.append_null()
    schema = pa.schema([pa.field("id", pa.int64()), builder.field], metadata={"lance.blob.managed": "true"})
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.Table.from_arrays([pa.array([0, 1, 2, 3]), builder.finish()], schema=schema), path,
                        data_storage_version="2.2",
                        initial_bases=[lance.DatasetBasePath(str(plain), name="plain", id=1),
                                       lance.DatasetBasePath(str(root), name="root", is_dataset_root=True, id=2)])
    assert feature_flags(path) == (16384 | 16, 16384 | 16)
    assert [d and (d["kind"], d["blob_id"]) for d in _descriptors(path).values()] == [(5, 1), (5, 2), (5, 1), None]
    want = {0: bytes(range(6, 16)), 1: bytes(range(52, 55)), 2: b"", 3: None}
    assert _take_blobs(path) == want
    assert _spark_bytes(spark, table_name) == want


# ---- Item 5: write what we read ----

F16_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("h", pa.float16()),
                        pa.field("v", pa.list_(pa.float16(), 3))])


def _f16_table(ids):
    import numpy as np
    return pa.table({"id": ids, "h": pa.array(np.array(ids, dtype=np.float16) / 4),
                     "v": pa.FixedSizeListArray.from_arrays(
                         pa.array(np.repeat(np.array(ids, dtype=np.float16), 3) + np.tile([0, 0.5, 1], len(ids)).astype(np.float16)), 3)},
                    schema=F16_SCHEMA)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_float16_columns_and_vectors_take_update_and_merge(spark, warehouse, table_name, version):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_f16_table(list(range(8))), path, data_storage_version=version)
    spark.sql(f"UPDATE {table_name} SET h = h + 1, v = transform(v, x -> x * 2) WHERE id < 3")
    spark.createDataFrame([(4, 9.5, [1.0, 2.0, 3.0]), (20, -2.25, [0.25, 0.5, 0.75])],
                          "id BIGINT, h FLOAT, v ARRAY<FLOAT>").createOrReplaceTempView("f16_src")
    spark.sql(f"MERGE INTO {table_name} t USING f16_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"DELETE FROM {table_name} WHERE id = 7")
    ds = lance.dataset(path)
    assert ds.schema == F16_SCHEMA
    got = {r["id"]: (r["h"], r["v"]) for r in ds.to_table().to_pylist()}
    want = {i: (i / 4, [i, i + 0.5, i + 1.0]) for i in range(7)}
    want.update({i: (i / 4 + 1, [2.0 * i, 2 * i + 1.0, 2 * i + 2.0]) for i in range(3)})
    want.update({4: (9.5, [1.0, 2.0, 3.0]), 20: (-2.25, [0.25, 0.5, 0.75])})
    assert got == want
    ds.validate()


PACKED_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("n", pa.int64()),
                           pa.field("p", pa.struct([("x", pa.int32()), ("y", pa.float64()), ("z", pa.uint8())]),
                                    metadata={"lance-encoding:packed": "true"})])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_packed_structs_take_update_and_merge(spark, warehouse, table_name, version):
    path = table_path(warehouse, table_name)
    rows = [{"x": i, "y": i / 2, "z": i % 3} if i != 3 else None for i in range(6)]
    lance.write_dataset(pa.table({"id": list(range(6)), "n": [0] * 6, "p": rows}, schema=PACKED_SCHEMA), path,
                        data_storage_version=version)
    spark.sql(f"UPDATE {table_name} SET p = named_struct('x', p.x + 100, 'y', p.y, 'z', 7) WHERE id IN (0, 1)")
    spark.sql(f"UPDATE {table_name} SET n = 5 WHERE id = 2")
    spark.createDataFrame([(3, 0, (30, 3.5, 3)), (9, 0, (90, 9.5, 9))],
                          "id BIGINT, n BIGINT, p STRUCT<x: INT, y: DOUBLE, z: SMALLINT>").createOrReplaceTempView("packed_src")
    spark.sql(f"MERGE INTO {table_name} t USING packed_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    ds = lance.dataset(path)
    assert ds.schema == PACKED_SCHEMA and ds.schema.field("p").metadata == {b"lance-encoding:packed": b"true"}
    got = {r["id"]: (r["n"], r["p"]) for r in ds.to_table().to_pylist()}
    assert got == {0: (0, {"x": 100, "y": 0.0, "z": 7}), 1: (0, {"x": 101, "y": 0.5, "z": 7}),
                   2: (5, {"x": 2, "y": 1.0, "z": 2}), 3: (0, {"x": 30, "y": 3.5, "z": 3}),
                   4: (0, {"x": 4, "y": 2.0, "z": 1}), 5: (0, {"x": 5, "y": 2.5, "z": 2}),
                   9: (0, {"x": 90, "y": 9.5, "z": 9})}
    ds.validate()


BLOB_V1_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("n", pa.int64()),
                            pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])


def test_blob_v1_columns_of_file_format_2_1_take_update_and_merge(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    values = [b"blob%d" % i * (i + 1) if i != 2 else None for i in range(5)] + [b""]
    lance.write_dataset(pa.table({"id": list(range(6)), "n": [0] * 6, "b": values}, schema=BLOB_V1_SCHEMA), path,
                        data_storage_version="2.1")
    before = _descriptors(path)
    spark.sql(f"UPDATE {table_name} SET n = 1 WHERE id < 4")
    assert _descriptors(path) == before  # left alone: every descriptor kept
    spark.sql(f"UPDATE {table_name} SET b = concat(b, X'FF') WHERE id = 1")
    spark.createDataFrame([(3, 3, b"three" * 1000), (9, 9, None), (10, 10, b"ten")],
                          "id BIGINT, n BIGINT, b BINARY").createOrReplaceTempView("blob_v1_src")
    spark.sql(f"MERGE INTO {table_name} t USING blob_v1_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    ds = lance.dataset(path)
    assert ds.schema == BLOB_V1_SCHEMA and ds.data_storage_version == "2.1"
    want = dict(enumerate(values))
    want.update({1: values[1] + b"\xff", 3: b"three" * 1000, 9: None, 10: b"ten"})
    assert _take_blobs(path) == want
    assert _spark_bytes(spark, table_name) == want
    ds.validate()


# ---- Item 7: managed blobs (flag 16384) are read; data overlay files (flag 64) refused by name ----

def test_managed_blobs_read_and_writes_refused_by_name(spark, warehouse, table_name):
    """pylance 14 writes managed blobs (descriptor kind 4: a range of an object under the table,
    schema metadata lance.blob.managed = true, feature flag 16384 for readers and writers) and
    reads them by default; Spark reads the bytes, and refuses to write the table, naming the flag."""
    from sparklance_testing import feature_flags
    path = table_path(warehouse, table_name)
    import os
    os.makedirs(os.path.join(path, "_blobs"))
    with open(os.path.join(path, "_blobs", "shared.blob"), "wb") as f:
        f.write(bytes(range(200)))
    builder = lance.BlobDescriptorArrayBuilder("b")
    builder.append_managed("_blobs/shared.blob", 0, 100)
    builder.append_managed("_blobs/shared.blob", 150, 20)
    builder.append_managed("_blobs/shared.blob", 0, 0)
    builder.append_null()
    schema = pa.schema([pa.field("id", pa.int64()), builder.field], metadata={"lance.blob.managed": "true"})
    lance.write_dataset(pa.Table.from_arrays([pa.array([0, 1, 2, 3]), builder.finish()], schema=schema), path,
                        data_storage_version="2.2")
    assert feature_flags(path) == (16384, 16384)
    assert [d and d["kind"] for d in _descriptors(path).values()] == [4, 4, 4, None]
    want = {0: bytes(range(100)), 1: bytes(range(150, 170)), 2: b"", 3: None}
    assert _take_blobs(path) == want
    assert _spark_bytes(spark, table_name) == want
    with pytest.raises(Exception, match=r"16384 \(managed blobs\)"):
        spark.sql(f"UPDATE {table_name} SET id = id + 1 WHERE id = 0")
    assert _take_blobs(path) == want and lance.dataset(path).version == 1


def test_data_overlay_flag_is_refused_by_name(spark, warehouse, table_name):
    """pylance 14 opens tables with data overlay files (flag 64) only behind its environment switch
    LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES; sparklance refuses them, naming the flag."""
    from sparklance_testing import set_reader_flags
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": [1, 2]}), path)
    set_reader_flags(path, 64)
    with pytest.raises(Exception, match=r"64 \(data overlay files\)"):
        spark.table(table_name).collect()


def test_update_and_merge_read_no_bytes_of_blobs_they_leave_alone(spark, tmp_path, table_name, external_blobs):
    """With the external objects moved away, UPDATE and MERGE of another column still succeed: they
    read no blob bytes; with the objects back, every blob reads as before."""
    path, expected = external_blobs
    before = _descriptors(path)
    away = tmp_path / "away"
    away.mkdir()
    objects = sorted(tmp_path.glob("object*.bin"))
    for o in objects:
        o.rename(away / o.name)
    spark.sql(f"UPDATE {table_name} SET n = n + 1 WHERE id IN (0, 1, 2)")
    spark.createDataFrame([(0, 5), (2, 6)], "id BIGINT, n BIGINT").createOrReplaceTempView("blob_src2")
    spark.sql(f"MERGE INTO {table_name} t USING blob_src2 s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = s.n")
    for o in objects:
        (away / o.name).rename(o)
    assert _descriptors(path) == before
    assert _take_blobs(path) == expected and _spark_bytes(spark, table_name) == expected
    assert {r.id: r.n for r in spark.sql(f"SELECT id, n FROM {table_name}").collect()} == {0: 5, 1: 1, 2: 6, 3: 0, 4: 0, 5: 0}
