"""`<table>.detail` (what Delta's DESCRIBE DETAIL gives) and `<table>.fragments` (one row a fragment,
as Iceberg's files table), checked against pylance 14's view of the same table and the files on disk,
for a table sparklance wrote, changed and indexed, and for one pylance wrote and changed."""
import os

import lance
import pyarrow as pa

from conftest import table_path


def assert_matches_pylance(spark, table_name, path):
    ds = lance.dataset(path)
    [detail] = spark.sql(f"SELECT * FROM {table_name}.detail").collect()
    fragments = {r.fragment_id: r for r in spark.sql(f"SELECT * FROM {table_name}.fragments").collect()}
    assert detail.format == "lance" and detail.location.rstrip("/").endswith(os.path.basename(path))
    assert detail.version == ds.version
    assert detail.data_storage_version == ds.data_storage_version
    assert detail.num_rows == ds.count_rows()
    assert detail.num_fragments == len(ds.get_fragments()) == len(fragments)
    assert detail.indices == sorted({i.name for i in ds.describe_indices()})
    # Spark keeps microseconds (truncated), pylance's datetime rounds the manifest's nanoseconds.
    assert abs(detail.last_modified.timestamp() - ds.versions()[-1]["timestamp"].timestamp()) < 2e-6
    deleted = 0
    for fragment in ds.get_fragments():
        meta = fragment.metadata
        row = fragments[fragment.fragment_id]
        assert row.data_files == [f"data/{f.path}" for f in meta.files]
        assert row.physical_rows == meta.physical_rows
        assert row.rows == fragment.count_rows()
        assert row.deleted_rows == meta.physical_rows - fragment.count_rows()
        assert (row.deletion_file is None) == (meta.deletion_file is None)
        files = [os.path.join(path, f) for f in row.data_files] + ([os.path.join(path, row.deletion_file)] if row.deletion_file else [])
        assert all(os.path.exists(f) for f in files), files
        assert row.size_in_bytes == sum(os.path.getsize(f) for f in files)
        deleted += row.deleted_rows
    assert detail.num_deleted_rows == deleted
    assert detail.size_in_bytes == sum(r.size_in_bytes for r in fragments.values())
    assert detail.num_data_files == sum(len(r.data_files) for r in fragments.values())
    assert detail.num_deletion_files == sum(1 for r in fragments.values() if r.deletion_file)
    return detail, fragments


def test_a_table_sparklance_wrote_changed_and_indexed(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '400', "
              "'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(1000).selectExpr("id", "concat('v', CAST(id % 7 AS STRING)) AS s").coalesce(1).writeTo(table_name).append()
    detail, fragments = assert_matches_pylance(spark, table_name, path)
    assert (detail.num_fragments, detail.num_rows, detail.num_deleted_rows, detail.indices) == (3, 1000, 0, [])
    assert detail.created_at is not None and detail.created_at <= detail.last_modified
    assert detail.properties["max_rows_per_file"] == "400" and detail.properties["provider"] == "lance"
    assert "deletion files" not in detail.reader_feature_flags
    spark.sql(f"DELETE FROM {table_name} WHERE id % 10 = 0")
    spark.sql(f"CREATE INDEX s_bm ON {table_name} USING bitmap (s)")
    spark.range(1000, 1100).selectExpr("id", "'new' AS s").coalesce(1).writeTo(table_name).append()
    detail, fragments = assert_matches_pylance(spark, table_name, path)
    assert (detail.num_fragments, detail.num_rows, detail.num_deleted_rows, detail.indices) == (4, 1000, 100, ["s_bm"])
    assert "deletion files" in detail.reader_feature_flags  # the first delete sets it
    assert sorted(r.fragment_id for r in fragments.values() if r.indices == ["s_bm"]) == [0, 1, 2]
    assert [r.indices for r in fragments.values() if r.fragment_id == 3] == [[]]


def test_a_table_pylance_wrote_and_changed(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = pa.table({"id": pa.array(range(3000), pa.int64()), "v": pa.array([float(i) for i in range(3000)])})
    lance.write_dataset(data, path, max_rows_per_file=1000, data_storage_version="2.1", enable_stable_row_ids=True)
    ds = lance.dataset(path)
    ds.delete("id < 50")
    ds.create_scalar_index("id", "BTREE")
    detail, fragments = assert_matches_pylance(spark, table_name, path)
    assert detail.data_storage_version == "2.1" and "stable row ids" in detail.reader_feature_flags
    assert (detail.num_fragments, detail.num_rows, detail.num_deleted_rows) == (3, 2950, 50)
    assert detail.properties["enable_stable_row_ids"] == "true"
