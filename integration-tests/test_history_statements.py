"""History names the statement that made each version, DML row counts reach the caller, and one
compaction makes as few versions as Lance allows; all checked by pylance 14.0.2 and DuckDB.

Spark returns no rows from DELETE / UPDATE / MERGE on a DataSource V2 table, so sparklance records
the counts in the commit's transaction properties; ``sparklance.last_commit_metrics`` reads them.
DuckDB runs the same statements on the same rows: its counts (MERGE ... RETURNING merge_action)
and final rows are the oracle.
"""
from collections import Counter

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc

import sparklance
from conftest import table_path

COUNTS = ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")


def _counts(metrics):
    return tuple(metrics[k] for k in COUNTS)


def test_dml_counts_match_duckdb(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    target = pa.table({"id": pa.array(range(300), pa.int64()), "v": pa.array([i % 5 for i in range(300)], pa.int64())})
    source = pa.table({"id": pa.array(range(200, 400, 2), pa.int64()),
                       "op": pa.array(["d" if i % 3 == 0 else "u" for i in range(200, 400, 2)])})
    lance.write_dataset(target, path, max_rows_per_file=70)  # pylance writes the table under test
    db = duckdb.connect()
    db.register("target_arrow", target)
    db.register("source_arrow", source)
    db.execute("CREATE TABLE t AS SELECT * FROM target_arrow")
    db.execute("CREATE TABLE s AS SELECT * FROM source_arrow")
    spark.createDataFrame(source.to_pandas()).createOrReplaceTempView("hs_src")

    merge = ("MERGE INTO {t} USING {s} ON {t}.id = {s}.id "
             "WHEN MATCHED AND {s}.op = 'd' THEN DELETE "
             "WHEN MATCHED THEN UPDATE SET v = {t}.v + 100 "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES ({s}.id, -1)")
    actions = Counter(a for (a,) in db.execute(merge.format(t="t", s="s") + " RETURNING merge_action").fetchall())
    assert spark.sql(merge.format(t=table_name, s="hs_src")).collect() == []  # Spark returns no rows for DSv2 DML
    got = sparklance.last_commit_metrics(spark, table_name)
    assert got["statement"] == "MERGE" and got["version"] == lance.dataset(path).version
    assert _counts(got) == (actions["INSERT"], actions["UPDATE"], actions["DELETE"]) and actions["DELETE"] > 0

    (updated,), = db.execute("UPDATE t SET v = v * 2 WHERE id % 7 = 1").fetchall()
    spark.sql(f"UPDATE {table_name} SET v = v * 2 WHERE id % 7 = 1")
    assert _counts(sparklance.last_commit_metrics(spark, table_name)) == (0, updated, 0)

    (deleted,), = db.execute("DELETE FROM t WHERE v < 3").fetchall()
    spark.sql(f"DELETE FROM {table_name} WHERE v < 3")
    got = sparklance.last_commit_metrics(spark, table_name)
    assert got["statement"] == "DELETE" and _counts(got) == (0, 0, deleted)

    # pylance reads the result, validates it, and keeps our properties beside its own view of history.
    ds = lance.dataset(path)
    ds.validate()
    assert ds.to_table().sort_by("id").equals(db.execute("SELECT id, v FROM t ORDER BY id").to_arrow_table().cast(ds.schema))
    props = ds.read_transaction(ds.version).transaction_properties
    assert props["sparklance.statement"] == "DELETE" and props["sparklance.rows_deleted"] == str(deleted)
    assert [v["version"] for v in ds.versions()] == list(range(1, ds.version + 1))
    # The version pylance wrote names no statement and counted nothing.
    first = spark.sql(f"SELECT operation_parameters, operation_metrics FROM {table_name}.history WHERE version = 1").first()
    assert "statement" not in first.operation_parameters and first.operation_metrics == {}


def test_history_names_statements_pylance_keeps_them(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('optimize_write' = 'false') AS SELECT id, 'a' AS s FROM range(5)")
    spark.sql(f"INSERT INTO {table_name} SELECT id, 'b' FROM range(5, 8)")
    spark.sql(f"ALTER TABLE {table_name} ADD COLUMNS (n INT)")
    sparklance.compact(spark, table_name)
    rows = sparklance.history(spark, table_name).orderBy("version").collect()
    assert [r.operation_parameters.get("statement") for r in rows] == ["CTAS", "INSERT", "ALTER ADD COLUMNS", "COMPACT", "COMPACT"]
    assert _counts(rows[0].operation_metrics) == (5, 0, 0) and _counts(rows[1].operation_metrics) == (3, 0, 0)
    # pylance's transactions carry the same names; a pylance commit after ours reads the table as before.
    ds = lance.dataset(table_path(warehouse, table_name))
    assert [t.transaction_properties.get("sparklance.statement") for t in ds.get_transactions()][:3] == \
        ["COMPACT", "COMPACT", "ALTER ADD COLUMNS"]
    ds.insert(pa.table({"id": pa.array([8], pa.int64()), "s": ["c"], "n": pa.array([1], pa.int32())}))
    assert spark.table(table_name).count() == 9
    assert sparklance.last_commit_metrics(spark, table_name)["statement"] is None


def test_one_compaction_of_zone_mapped_columns_is_two_versions(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, k BIGINT, s STRING) "
              "TBLPROPERTIES ('optimize_write' = 'false', 'zonemap_columns' = 'id,k,s')")
    for i in range(4):
        spark.sql(f"INSERT INTO {table_name} SELECT /*+ COALESCE(1) */ id, id % 13, CAST(id AS STRING) "
                  f"FROM range({i * 100}, {i * 100 + 100})")
    # Only the first fragments are compacted: each zone map's segments (one per insert) and the
    # zones of the new fragment become one segment, in the Rewrite's own version.
    result = spark.sql(f"CALL lance.system.compact(table => '{table_name.split('.', 1)[1]}', "
                       "target_rows_per_fragment => 1000, where => '_fragid < 2')").first()
    path = table_path(warehouse, table_name)
    ds = lance.dataset(path)
    made = [r for r in sparklance.history(spark, table_name).orderBy("version").collect() if r.version > result.read_version]
    # Lance's compaction too reserves the new fragments' ids in a version before the Rewrite.
    assert [r.operation for r in made] == ["ReserveFragments", "Rewrite"]
    assert {r.operation_parameters["statement"] for r in made} == {"COMPACT"}
    # Three zone maps, one segment each, covering every fragment.
    segments = Counter(i["name"] for i in ds.list_indices())
    assert sorted(segments.values()) == [1, 1, 1] and len(segments) == 3
    assert all(set(i["fragment_ids"]) == {f.fragment_id for f in ds.get_fragments()} for i in ds.list_indices())
    ds.validate()
    for column, value in (("id", 150), ("k", 7), ("s", "42")):
        filt = pc.field(column) == value
        assert ds.to_table(filter=filt).sort_by("id").equals(ds.to_table(filter=filt, use_scalar_index=False).sort_by("id"))
    assert ds.count_rows() == 400
