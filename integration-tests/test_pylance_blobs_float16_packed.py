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
