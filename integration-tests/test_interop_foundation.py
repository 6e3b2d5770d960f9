"""Issue 2 interop: tables written by Spark read identically by pylance, and the other way round."""
import datetime as dt
import os
import decimal

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conftest import table_path

N = 100_000

# Spark column -> (SQL type, expression over `id`, the Arrow type pylance must report)
SPARK_COLUMNS = {
    "b": ("BOOLEAN", "id % 3 = 0", pa.bool_()),
    "i8": ("TINYINT", "CAST(id % 256 - 128 AS TINYINT)", pa.int8()),
    "i16": ("SMALLINT", "CAST(id % 65536 - 32768 AS SMALLINT)", pa.int16()),
    "i32": ("INT", "CAST(id * 7919 % 2147483647 - 1073741823 AS INT)", pa.int32()),
    "f32": ("FLOAT", "CAST(id / 7.0 AS FLOAT)", pa.float32()),
    "f64": ("DOUBLE", "id * 1.000001 - 5e4", pa.float64()),
    "s": ("STRING", "IF(id % 5 = 0, '', concat('name-', id, repeat('x', CAST(id % 40 AS INT))))", pa.utf8()),
    "bin": ("BINARY", "unhex(hex(id * 31))", pa.binary()),
    "d": ("DATE", "date_add(DATE'1960-01-01', CAST(id % 40000 AS INT))", pa.date32()),
    "ts": ("TIMESTAMP", "timestamp_micros(id * 123456789 - 99999999999)", pa.timestamp("us", tz="UTC")),
    "tsn": ("TIMESTAMP_NTZ", "CAST(timestamp_micros(id * 987654 + 1) AS TIMESTAMP_NTZ)", pa.timestamp("us")),
    "dec": ("DECIMAL(18, 4)", "CAST(id * 1.2345 - 777 AS DECIMAL(18, 4))", pa.decimal128(18, 4)),
}


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_spark_writes_pylance_reads_identically(spark, warehouse, table_name, version):
    cols = ", ".join(f"{c} {t}" for c, (t, _, _) in SPARK_COLUMNS.items())
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, {cols}) "
              f"TBLPROPERTIES ('data_storage_version' = '{version}')")
    # Every column is null on its own pattern of rows.
    exprs = ", ".join(f"IF(id % {11 + k} = 3, NULL, {e}) AS {c}"
                      for k, (c, (_, e, _)) in enumerate(SPARK_COLUMNS.items()))
    spark.sql(f"SELECT id, {exprs} FROM range({N})").repartition(3).writeTo(table_name).append()

    expected = spark.table(table_name).toArrow().sort_by("id")
    ds = lance.dataset(table_path(warehouse, table_name))
    assert ds.data_storage_version == version
    got = ds.to_table().sort_by("id")
    assert got.num_rows == N
    assert got.schema.field("id").type == pa.int64()
    for c, (_, _, arrow_type) in SPARK_COLUMNS.items():
        assert got.schema.field(c).type == arrow_type, c
        assert got.column(c).null_count > 0, c
    assert got.equals(expected.cast(got.schema))
    # pylance's random access (take) decodes our pages too.
    picks = [0, 1, 4999, N - 1]
    assert ds.take(picks).to_pylist() == ds.to_table().take(picks).to_pylist()
    assert ds.count_rows() == N


def _pylance_table(n, seed=7):
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    mask = rng.random(n) < 0.1

    def nulled(arr):
        return pc.if_else(pa.array(mask), pa.scalar(None, arr.type), arr)

    words = np.array(["alpha", "beta", "gamma", "", "δέλτα", "x" * 300])
    base = dt.datetime(2001, 2, 3, tzinfo=dt.timezone.utc)
    cols = {
        "id": pa.array(ids),
        "b": nulled(pa.array(rng.random(n) < 0.5)),
        "i8": nulled(pa.array(rng.integers(-128, 128, n), pa.int8())),
        "i16": nulled(pa.array(rng.integers(-2**15, 2**15, n), pa.int16())),
        "i32": nulled(pa.array(rng.integers(-2**31, 2**31, n), pa.int32())),
        "i64": nulled(pa.array(rng.integers(-2**62, 2**62, n), pa.int64())),
        "u8": nulled(pa.array(rng.integers(0, 256, n), pa.uint8())),
        "u16": nulled(pa.array(rng.integers(0, 2**16, n), pa.uint16())),
        "u32": nulled(pa.array(rng.integers(0, 2**32, n), pa.uint32())),
        "f32": nulled(pa.array(rng.standard_normal(n), pa.float32())),
        "f64": nulled(pa.array(rng.standard_normal(n) * 1e6, pa.float64())),
        "s": nulled(pa.array([f"{words[i % 6]}-{i}" for i in range(n)])),
        "lowcard": nulled(pa.array(words[rng.integers(0, 6, n)].tolist())),
        "ls": nulled(pa.array([f"large-{i}" for i in range(n)], pa.large_string())),
        "bin": nulled(pa.array([bytes([i % 256]) * (i % 7) for i in range(n)], pa.binary())),
        "d": nulled(pa.array((ids % 30000).astype("int32"), pa.int32()).cast(pa.date32())),
        "ts": nulled(pa.array([base + dt.timedelta(microseconds=int(i) * 1234567) for i in ids], pa.timestamp("us", tz="UTC"))),
        "tsn": nulled(pa.array(ids * 1_000_001, pa.timestamp("us"))),
        "ts_ms": nulled(pa.array(ids * 1001, pa.timestamp("ms", tz="UTC"))),
        "dec": nulled(pa.array([decimal.Decimal(int(i) * 37 - 1000) / 100 for i in ids], pa.decimal128(12, 2))),
    }
    return pa.table(cols)


# How sparklance presents pylance types that Spark lacks: widened, never truncated.
SPARK_VIEW = {"u8": pa.int16(), "u16": pa.int32(), "u32": pa.int64(), "ls": pa.string(), "ts_ms": pa.timestamp("us", tz="UTC")}


@pytest.mark.parametrize("predicate,deleted,kind", [
    ("id % 5 = 1 AND id < 185", 37, "arrow"),
    ("id >= 100 AND id < 6100", 6000, "bin"),
], ids=["arrow_deletions", "bitmap_deletions"])
def test_pylance_writes_spark_reads_live_rows(spark, warehouse, table_name, predicate, deleted, kind):
    data = _pylance_table(30_000)
    path = table_path(warehouse, table_name)
    lance.write_dataset(data, path, data_storage_version="2.0", max_rows_per_file=12_000)
    lance.dataset(path).delete(predicate)
    ds = lance.dataset(path)
    assert {f.rsplit(".", 1)[-1] for f in os.listdir(os.path.join(path, "_deletions"))} == {kind}
    assert ds.count_rows() == 30_000 - deleted

    got = spark.table(table_name).toArrow().sort_by("id")
    expected = ds.to_table().sort_by("id")
    assert got.num_rows == expected.num_rows == 30_000 - deleted
    for name, t in SPARK_VIEW.items():
        assert got.schema.field(name).type == t, name
    assert got.equals(expected.cast(got.schema))
    assert spark.sql(f"SELECT count(*) FROM {table_name}").first()[0] == 30_000 - deleted


def test_cross_appends(spark, warehouse, table_name):
    # Spark creates, pylance appends; then pylance creates, Spark appends.
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, s STRING, d DOUBLE)")
    spark.sql(f"INSERT INTO {table_name} SELECT id, CAST(id AS STRING), id / 2 FROM range(1000)")
    path = table_path(warehouse, table_name)
    extra = pa.table({"id": pa.array(range(1000, 1500), pa.int64()),
                      "s": pa.array([str(i) for i in range(1000, 1500)]),
                      "d": pa.array([i / 2 for i in range(1000, 1500)])})
    lance.write_dataset(extra, path, mode="append")
    assert lance.dataset(path).count_rows() == 1500
    spark.sql(f"INSERT INTO {table_name} SELECT id, CAST(id AS STRING), id / 2 FROM range(1500, 1600)")
    from_spark = spark.table(table_name).toArrow().sort_by("id")
    from_lance = lance.dataset(path).to_table().sort_by("id")
    assert from_spark.num_rows == 1600
    assert from_spark.equals(from_lance.cast(from_spark.schema))
    assert from_spark.column("id").to_pylist() == list(range(1600))

    other = table_name + "_py"
    other_path = table_path(warehouse, other)
    lance.write_dataset(extra, other_path, data_storage_version="2.0")
    spark.sql(f"INSERT INTO {other} SELECT id, CAST(id AS STRING), id / 2 FROM range(3)")
    assert lance.dataset(other_path).count_rows() == 503
    assert sorted(lance.dataset(other_path).to_table().column("id").to_pylist()) == [0, 1, 2] + list(range(1000, 1500))
    assert spark.table(other).count() == 503
