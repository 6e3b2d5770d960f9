"""Compaction from Spark (CALL lance.system.compact / sparklance.compact), checked by pylance.

Both directions of interop: pylance reads a table we compacted identically (rows, _rowid, both
version columns) and its cleanup keeps everything the latest version needs; we read a table pylance
compacted. And index safety: pylance's indexed queries on a table updated from Spark and compacted
by us return what a scan returns.
"""
import datetime

import lance
import numpy as np
import pyarrow as pa

import sparklance
from conftest import table_path

LINEAGE = ["id", "v", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]


def _pylance_rows(path):
    t = lance.dataset(path).to_table(columns=LINEAGE)
    return sorted(zip(*[t.column(c).to_pylist() for c in LINEAGE]))


def test_spark_compacts_pylance_reads_identically(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, v STRING) "
              "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'optimize_write' = 'false')")
    for i in range(5):
        spark.sql(f"INSERT INTO {table_name} SELECT /*+ COALESCE(1) */ id, 'v' || id FROM range({i * 200}, {i * 200 + 200})")
    spark.range(900, 1100).selectExpr("id", "'merged' AS v").createOrReplaceTempView("src")
    spark.sql(f"MERGE INTO {table_name} t USING src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"DELETE FROM {table_name} WHERE id % 7 = 0")
    path = table_path(warehouse, table_name)
    before = _pylance_rows(path)
    fragments_before = len(lance.dataset(path).get_fragments())

    result = sparklance.compact(spark, table_name, target_rows_per_fragment=2000)
    assert result.version == result.read_version + 2 and result.fragments_removed == fragments_before
    ds = lance.dataset(path)
    assert ds.version == result.version and len(ds.get_fragments()) == 1
    # The default zone maps' segments (one per write) are folded into one each in the compaction's version.
    assert all(len(i.segments) == 1 for i in ds.describe_indices()), ds.describe_indices()
    assert _pylance_rows(path) == before
    assert sorted(map(tuple, spark.sql(f"SELECT {', '.join(LINEAGE)} FROM {table_name}").collect())) == before

    # pylance's cleanup of every old version leaves what the latest needs; we and pylance still read it.
    lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
    assert _pylance_rows(path) == before
    assert spark.table(table_name).count() == len(before)


def test_pylance_compacts_spark_reads(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    for i in range(6):
        lance.write_dataset(pa.table({"id": pa.array(range(i * 50, i * 50 + 50), pa.int64()),
                                      "v": [f"p{k}" for k in range(i * 50, i * 50 + 50)]}),
                            path, mode="append" if i else "create", enable_stable_row_ids=True)
    lance.dataset(path).delete("id < 20")
    expected = _pylance_rows(path)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=1000)
    assert len(lance.dataset(path).get_fragments()) == 1
    assert sorted(map(tuple, spark.sql(f"SELECT {', '.join(LINEAGE)} FROM {table_name}").collect())) == expected
    # Ours finds nothing more to do on pylance's result.
    assert sparklance.compact(spark, table_name, target_rows_per_fragment=1000).version is None


def test_indexed_queries_after_spark_update_and_compaction(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    rng = np.random.default_rng(3)
    for i in range(8):
        ids = np.arange(i * 250, i * 250 + 250, dtype=np.int64)
        lance.write_dataset(pa.table({
            "id": ids, "cat": [f"c{k % 5}" for k in ids],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(250 * 8, dtype=np.float32)), 8)}),
            path, mode="append" if i else "create", enable_stable_row_ids=True)
        if i == 3:
            lance.dataset(path).create_scalar_index("id", "BTREE")
    ds = lance.dataset(path)
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    spark.sql(f"UPDATE {table_name} SET cat = 'updated' WHERE id % 9 = 4")
    spark.sql(f"DELETE FROM {table_name} WHERE id % 13 = 0")
    result = sparklance.compact(spark, table_name, target_rows_per_fragment=1000)
    assert result.version is not None
    assert any("BTree" in reason for reason in result.left_alone)  # fragments 0-3 stay for the BTREE

    ds = lance.dataset(path)
    for f in ["id = 777", "id >= 1500 and id < 1600", "cat = 'c2'", "cat = 'updated'"]:
        indexed = sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())
        scanned = sorted(ds.to_table(columns=["id"], filter=f, use_scalar_index=False).column("id").to_pylist())
        assert indexed == scanned and indexed, f
        expected = sorted(r.id for r in spark.sql(f"SELECT id FROM {table_name} WHERE {f}").collect())
        assert indexed == expected, f
    q = rng.random(8, dtype=np.float32)
    ann = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "nprobes": 2, "refine_factor": 1000})
    exact = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "use_index": False})
    assert sorted(ann.column("id").to_pylist()) == sorted(exact.column("id").to_pylist())


def test_restore_from_python_then_pylance_reads_it(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT)")
    spark.sql(f"INSERT INTO {table_name} SELECT id FROM range(5)")
    spark.sql(f"DELETE FROM {table_name} WHERE id > 1")
    row = sparklance.restore(spark, table_name, version=2)
    assert (row.restored_version, row.version) == (2, 4)
    ds = lance.dataset(table_path(warehouse, table_name))
    assert ds.version == 4 and sorted(ds.to_table().column("id").to_pylist()) == [0, 1, 2, 3, 4]


def test_pylance_restores_and_cleans_spark_reads_identically(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, 'a' FROM range(0, 40)")                  # v2
    spark.sql(f"UPDATE {t} SET v = 'b' WHERE id % 3 = 0")                            # v3
    kept = _pylance_rows(path)
    spark.sql(f"DELETE FROM {t} WHERE id < 20")                                      # v4
    ds = lance.dataset(path).checkout_version(3)
    ds.restore()                                                                      # v5
    lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert [v["version"] for v in lance.dataset(path).versions()] == [5]
    assert _pylance_rows(path) == kept
    assert sorted(map(tuple, spark.sql(f"SELECT {', '.join(LINEAGE)} FROM {t}").collect())) == kept
    with_ids = lance.dataset(path).to_table(columns=["id"], with_row_id=True)
    assert sorted(zip(with_ids.column("id").to_pylist(), with_ids.column("_rowid").to_pylist())) == \
        sorted((r[0], r[2]) for r in kept)
    assert spark.sql(f"SELECT operation FROM {t}.history").collect()[0].operation == "Restore"
    spark.sql(f"INSERT INTO {t} VALUES (100, 'new')")                                # v6, on pylance's restore
    assert lance.dataset(path).count_rows() == len(kept) + 1
