"""Appends read back by pylance: the rows Spark appends to 2.0, 2.1 and 2.2 tables are exactly the
rows pylance reads. Flat columns come with and without NULLs from one write batch (8192 rows) to
the next, which the writer encodes by different paths; text of 1- to 4-byte characters, empty
strings, and values long enough that a column's pages end between them."""
import random

import lance
import pyarrow as pa
import pytest

from conftest import table_path

ROWS = 40_000


def _source(seed):
    rnd = random.Random(seed)

    def nulls(i, rate):
        # Runs of 10,000 rows without NULLs, then with some: batches of both kinds.
        return (i // 10_000) % 2 == 1 and rnd.random() < rate
    texts = ["", "é", "😀x", "漢字" * 3, "plain"]
    ids = range(ROWS)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array([None if nulls(i, 0.2) else rnd.randrange(-2**62, 2**62) for i in ids], pa.int64()),
        "small": pa.array([None if nulls(i, 0.3) else rnd.randrange(0, 100) for i in ids], pa.int32()),
        "flag": pa.array([None if nulls(i, 0.1) else rnd.random() < 0.5 for i in ids], pa.bool_()),
        "v": pa.array([None if nulls(i, 0.2) else rnd.random() * 1e6 for i in ids], pa.float64()),
        "s": pa.array([None if nulls(i, 0.25) else rnd.choice(texts) + str(rnd.randrange(1000)) * rnd.randrange(3)
                       for i in ids], pa.string()),
        # About 40 values of ~280 KB among short ones: 8 MB pages end between them.
        "big": pa.array([f"ü{i}" * 40_000 if i % 997 == 5 else None if nulls(i, 0.5) else "b" * rnd.randrange(30)
                         for i in ids], pa.string()),
    })


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_appended_rows_read_back_by_pylance(spark, warehouse, table_name, version):
    source = _source(37)
    spark.sql(f"""CREATE TABLE {table_name} (id BIGINT, k BIGINT, small INT, flag BOOLEAN, v DOUBLE, s STRING,
        big STRING) TBLPROPERTIES ('data_storage_version' = '{version}')""")
    spark.createDataFrame(source).repartition(2).writeTo(table_name).append()
    ds = lance.dataset(table_path(warehouse, table_name))
    assert ds.data_storage_version == version
    got = ds.to_table().sort_by("id")
    assert got.num_rows == ROWS
    for name in source.column_names:
        assert got.column(name).cast(source.schema.field(name).type).combine_chunks().equals(
            source.column(name).combine_chunks()), name


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_unshuffled_append_with_packed_tails_read_back_by_pylance(spark, warehouse, table_name, version):
    """Two input partitions of 20,000 rows, 4,500 rows per file: each holds more than 4 fragments'
    rows, so the optimized write skips its shuffle; each task writes 4 full fragments and a tail of
    2,000 rows, and the commit packs the two tails into one fragment read back from the files: 9
    fragments (ceil(40,000 / 4,500)), not 10, holding exactly the rows."""
    source = _source(41)
    spark.sql(f"""CREATE TABLE {table_name} (id BIGINT, k BIGINT, small INT, flag BOOLEAN, v DOUBLE, s STRING,
        big STRING) TBLPROPERTIES ('data_storage_version' = '{version}', 'max_rows_per_file' = '4500')""")
    spark.createDataFrame(source).repartition(2).createOrReplaceTempView("unshuffled_source")
    insert = spark.sql(f"INSERT INTO {table_name} SELECT * FROM unshuffled_source")
    # The plan adaptive execution ran: no rebalance of the rows for the write.
    assert "REBALANCE_PARTITIONS_BY_COL" not in insert._jdf.queryExecution().commandExecuted().commandPhysicalPlan().toString()
    ds = lance.dataset(table_path(warehouse, table_name))
    assert sorted(f.count_rows() for f in ds.get_fragments()) == [4000] + [4500] * 8
    got = ds.to_table().sort_by("id")
    assert got.num_rows == ROWS
    for name in source.column_names:
        assert got.column(name).cast(source.schema.field(name).type).combine_chunks().equals(
            source.column(name).combine_chunks()), name
