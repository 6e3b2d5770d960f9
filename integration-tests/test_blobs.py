"""pylance's blob columns (`lance-encoding:blob`: descriptors in the column's pages, the bytes in the
data file on 2.0 and 2.1; blob v2 on 2.2, with inline, packed and dedicated sidecar storage) read
by Spark as BINARY, identical to pylance's `take_blobs`, and not read at all when not selected."""
import hashlib

import lance
import numpy as np
import pyarrow as pa
import pytest

from conftest import scan_metrics, table_path

SCHEMA = pa.schema([pa.field("id", pa.int64()),
                    pa.field("img", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])


def _write_blob_table(path, version, seed=7):
    """Rows of every size class (empty, small, inline, packed and dedicated on 2.2, 6 MiB), NULLs,
    in two appends, then a delete; returns {id: sha1 or None} of the rows left."""
    rng = np.random.default_rng(seed)
    sizes = [0, 10, 1000, 60_000, 100_000, 300_000, 6_000_000, None] * 3
    expected = {}
    for part in range(2):
        ids = list(range(part * len(sizes), (part + 1) * len(sizes)))
        values = [None if s is None else rng.bytes(s) for s in sizes]
        lance.write_dataset(pa.table({"id": ids, "img": values}, schema=SCHEMA), path,
                            mode="append" if part else "create", data_storage_version=version)
        expected.update({i: None if v is None else hashlib.sha1(v).hexdigest() for i, v in zip(ids, values)})
    lance.dataset(path).delete("id % 5 = 3")
    return {i: h for i, h in expected.items() if i % 5 != 3}


def _scan_bytes(spark, query):
    """Runs `query` and returns its rows and the bytes its Lance scan read from data files."""
    rows, metrics = scan_metrics(spark.sql(query))
    return rows, metrics["dataBytesRead"]


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_spark_reads_pylance_blob_columns(spark, warehouse, table_name, version):
    path = table_path(warehouse, table_name)
    expected = _write_blob_table(path, version)
    df = spark.table(table_name)
    assert df.schema["img"].dataType.simpleString() == "binary"
    assert df.schema["img"].metadata == {"lance-encoding:blob": "true"}
    got = {r.id: None if r.h is None else r.h for r in spark.sql(f"SELECT id, sha1(img) AS h FROM {table_name}").collect()}
    assert got == expected
    # pylance's own view of the bytes, row by row.
    ds = lance.dataset(path)
    ids = ds.to_table(columns=["id"], with_row_address=True)
    blobs = ds.take_blobs("img", addresses=ids.column("_rowaddr").to_pylist())
    from_pylance = {i: hashlib.sha1(b.read()).hexdigest() for i, b in zip(ids.column("id").to_pylist(), blobs) if b is not None}
    assert from_pylance == {i: h for i, h in expected.items() if h is not None}
    # Without the blob column, the scan reads none of its bytes.
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        (row,), read = _scan_bytes(spark, f"SELECT count(*), sum(id) FROM {table_name} WHERE id >= 0")
        assert (row[0], row[1]) == (len(expected), sum(expected))
        assert read < 1 << 20, read  # footers and the id pages; the blobs are 37 MB
        (row,), read = _scan_bytes(spark, f"SELECT sum(length(img)) FROM {table_name}")
        assert read >= 2 * 6_000_000 * 3 * 0.8
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def _pylance_blobs(path):
    """{id: sha1 or None} of a blob column as pylance's take_blobs returns its bytes."""
    ds = lance.dataset(path)
    ids = ds.to_table(columns=["id"], with_row_address=True)
    blobs = ds.take_blobs("img", addresses=ids.column("_rowaddr").to_pylist())
    return {i: None if b is None else hashlib.sha1(b.read()).hexdigest() for i, b in zip(ids.column("id").to_pylist(), blobs)}


def _spark_blobs(spark, table):
    return {r.id: r.h for r in spark.sql(f"SELECT id, sha1(img) AS h FROM {table}").collect()}


def test_spark_writes_blob_columns_pylance_reads_them(spark, warehouse, table_name):
    """A BINARY column with metadata lance-encoding:blob is written as pylance's blob v2 (inline,
    packed and dedicated by size); INSERT, UPDATE, MERGE and CTAS keep it one; pylance reads every
    version's bytes with take_blobs and appends its own rows, which Spark reads."""
    rng = np.random.default_rng(11)
    sizes = [0, 10, 70_000, 1 << 20, 5 << 20, None]
    rows = [(i, None if s is None else rng.bytes(s)) for i, s in enumerate(sizes)]
    want = {i: None if v is None else hashlib.sha1(v).hexdigest() for i, v in rows}
    df = spark.createDataFrame(rows, "id BIGINT, img BINARY").withMetadata("img", {"lance-encoding:blob": "true"})
    df.writeTo(table_name).create()
    path = table_path(warehouse, table_name)
    ds = lance.dataset(path)
    assert str(ds.schema.field("img").type) == "extension<lance.blob.v2<BlobType>>"
    kinds = {d["size"]: d["kind"] for d in ds.to_table(columns=["img"]).column("img").to_pylist() if d}
    assert kinds == {0: 0, 10: 0, 70_000: 1, 1 << 20: 1, 5 << 20: 2}, kinds  # inline, packed, dedicated
    assert _pylance_blobs(path) == want and _spark_blobs(spark, table_name) == want

    spark.sql(f"INSERT INTO {table_name} SELECT id + 10, substring(img, 1, 100) FROM {table_name} WHERE id < 4")
    spark.sql(f"UPDATE {table_name} SET img = substring(img, 2) WHERE id = 4")
    source = spark.createDataFrame([(3, b"m" * 300_000), (20, b"n" * 6_000_000)], "id BIGINT, img BINARY")
    source.createOrReplaceTempView("blob_src")
    spark.sql(f"MERGE INTO {table_name} t USING blob_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET img = s.img WHEN NOT MATCHED THEN INSERT *")
    expected = _spark_blobs(spark, table_name)
    assert expected[4] == hashlib.sha1(rows[4][1][1:]).hexdigest()
    assert expected[3] == hashlib.sha1(b"m" * 300_000).hexdigest() and expected[20] == hashlib.sha1(b"n" * 6_000_000).hexdigest()
    assert expected[11] == hashlib.sha1(rows[1][1][:100]).hexdigest() and len(expected) == 11
    assert _pylance_blobs(path) == expected

    copy = f"{table_name}_copy"
    spark.sql(f"CREATE TABLE {copy} AS SELECT * FROM {table_name}")
    copy_path = table_path(warehouse, copy)
    assert str(lance.dataset(copy_path).schema.field("img").type) == "extension<lance.blob.v2<BlobType>>"
    assert _pylance_blobs(copy_path) == expected

    appended = pa.table({"id": [100], "img": [b"z" * 200_000]}, schema=SCHEMA)
    lance.write_dataset(appended, path, mode="append")
    assert _spark_blobs(spark, table_name) == {**expected, 100: hashlib.sha1(b"z" * 200_000).hexdigest()}


def test_blob_columns_need_file_format_2_2_to_be_written(spark, table_name):
    df = spark.createDataFrame([(1, b"x")], "id BIGINT, img BINARY").withMetadata("img", {"lance-encoding:blob": "true"})
    with pytest.raises(Exception, match="blob column.*2.2"):
        df.writeTo(table_name).tableProperty("data_storage_version", "2.0").create()
