"""Zone maps gathered by the write tasks: a table with `zonemap_columns` gets zone map segments from
every write that adds fragments (INSERT, UPDATE, MERGE, CTAS, compaction) as the rows pass;
pylance lists and uses them; '*' covers every column, '' none, and an unset property the first 32
columns of types with zone maps. Optimized writes keep the order
of a sorted input, so each fragment holds one run of the key and a point lookup reads one fragment."""
import glob
import os

import lance
import pytest
from lance.file import LanceFileReader

from conftest import scan_metrics, table_path


def zone_maps(path):
    """{index name: (columns, covered fragment ids)} of the table's zone maps, as pylance lists them."""
    found = {}
    for i in lance.dataset(path).describe_indices():
        assert i.index_type == "ZoneMap", i
        found[i.name] = (list(i.field_names), sorted(f for s in i.segments for f in s.fragment_ids))
    return found


def fragment_ids(path):
    return sorted(f.fragment_id for f in lance.dataset(path).get_fragments())


def assert_covering(path, columns):
    """Every listed column has a zone map covering every fragment, and no other column has one."""
    maps = zone_maps(path)
    assert sorted(c for cs, _ in maps.values() for c in cs) == sorted(columns), maps
    ids = fragment_ids(path)
    assert all(covered == ids for _, covered in maps.values()), (maps, ids)


def assert_pylance_uses(path, where, column):
    ds = lance.dataset(path)
    indexed = ds.to_table(filter=where, use_scalar_index=True).sort_by(column).to_pylist()
    plain = ds.to_table(filter=where, use_scalar_index=False).sort_by(column).to_pylist()
    assert repr(indexed) == repr(plain) and plain, where
    assert "ScalarIndexQuery" in ds.scanner(filter=where, use_scalar_index=True).explain_plan(), where


def test_every_write_of_a_default_table_commits_zone_maps(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, s STRING, d DOUBLE, tags ARRAY<STRING>, dt DATE) "
              "TBLPROPERTIES ('zonemap_columns' = '*')")
    spark.sql(f"INSERT INTO {table_name} SELECT id, concat('s', id), id / 2, array('a'), date_add(DATE'2024-01-01', CAST(id AS INT)) "
              "FROM range(0, 3000)")
    versions = len(lance.dataset(path).versions())
    columns = ["id", "s", "d", "dt"]
    assert_covering(path, columns)
    assert set(zone_maps(path)) == {"id_idx", "s_idx", "d_idx", "dt_idx"}
    spark.sql(f"INSERT INTO {table_name} SELECT id, concat('s', id), id / 2, array('b'), NULL FROM range(3000, 3500)")
    # The segments land in the version of the rows: one version per statement.
    assert len(lance.dataset(path).versions()) == versions + 1
    assert_covering(path, columns)
    spark.sql(f"UPDATE {table_name} SET d = -1.0 WHERE id < 100")
    assert_covering(path, columns)
    spark.sql(f"CREATE OR REPLACE TEMP VIEW src AS SELECT id, 'merged' AS s FROM range(3400, 3600)")
    spark.sql(f"MERGE INTO {table_name} t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s "
              "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)")
    assert_covering(path, columns)
    short = table_name.removeprefix("lance.")
    before = fragment_ids(path)
    compacted = spark.sql(f"CALL lance.system.compact(table => '{short}')").head()
    assert compacted.fragments_added >= 1 and fragment_ids(path) != before, (compacted, before)
    assert_covering(path, columns)
    assert lance.dataset(path).validate() is None
    for where, column in [("id = 3450", "id"), ("id BETWEEN 10 AND 20", "id"), ("s = 'merged'", "id"),
                          ("d < 0", "id"), ("dt IS NULL", "id")]:
        assert_pylance_uses(path, where, column)

    ctas = table_name + "_ctas"
    spark.sql(f"CREATE TABLE {ctas} TBLPROPERTIES ('zonemap_columns' = '*') AS SELECT id, s FROM {table_name} WHERE id < 1000")
    assert_covering(table_path(warehouse, ctas), ["id", "s"])
    assert_pylance_uses(table_path(warehouse, ctas), "s = 's500'", "id")


def test_zonemap_columns_empty_all_and_the_first_32(spark, warehouse, table_name):
    wide = ", ".join(f"c{i} INT" for i in range(40))
    values = ", ".join(f"CAST(id + {i} AS INT)" for i in range(40))
    for suffix, props, expected in [("dflt", "", [f"c{i}" for i in range(32)]),
                                    ("none", "TBLPROPERTIES ('zonemap_columns' = '')", []),
                                    ("all", "TBLPROPERTIES ('zonemap_columns' = '*')", [f"c{i}" for i in range(40)]),
                                    ("some", "TBLPROPERTIES ('zonemap_columns' = 'c39, c1')", ["c39", "c1"])]:
        name = f"{table_name}_{suffix}"
        spark.sql(f"CREATE TABLE {name} ({wide}) {props}")
        spark.sql(f"INSERT INTO {name} SELECT {values} FROM range(0, 100)")
        path = table_path(warehouse, name)
        assert_covering(path, expected)
        if not expected:
            assert lance.dataset(path).describe_indices() == []
    # Widening a zone-mapped column drops its zone map with the old field id; the next write keeps the new one.
    name = f"{table_name}_all"
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN c0 TYPE BIGINT")
    assert "c0_idx" not in zone_maps(table_path(warehouse, name))
    spark.sql(f"INSERT INTO {name} SELECT {values} FROM range(100, 200)")
    assert zone_maps(table_path(warehouse, name))["c0_idx"] == (["c0"], [1])
    # Changed later: the next write keeps what the property now says.
    name = f"{table_name}_none"
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('zonemap_columns' = 'c5')")
    spark.sql(f"INSERT INTO {name} SELECT {values} FROM range(100, 200)")
    assert zone_maps(table_path(warehouse, name)) == {"c5_idx": (["c5"], [1])}
    with pytest.raises(Exception, match="zonemap_columns"):
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('zonemap_columns' = 'c1,,c2')")


def test_sorted_append_keeps_its_order_across_fragments(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, payload STRING) TBLPROPERTIES ('max_rows_per_file' = '20000', 'zonemap_columns' = 'id')")
    # Shuffled first, so only the sort orders it; rows large enough that the write spans several tasks.
    df = spark.range(200_000).repartition(5).selectExpr("id", "repeat(sha2(CAST(id AS STRING), 256), 4) AS payload")
    df.orderBy("id").writeTo(table_name).append()
    ds = lance.dataset(path)
    ranges = []
    for f in ds.get_fragments():
        ids = f.to_table(columns=["id"]).column("id").to_pylist()
        ranges.append((min(ids), max(ids), len(ids)))
        # Each fragment also holds its run in order.
        assert ids == sorted(ids)
    ranges.sort()
    assert len(ranges) >= 10 and sum(r[2] for r in ranges) == 200_000, ranges
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), ranges
    # The scan without skipping first: it reads every file's metadata, which the process then keeps,
    # so the bytes compared next are the pages' alone.
    _, unskipped = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WITH ('data_skipping' = 'false') WHERE id = 123456"))
    rows, metrics = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WHERE id = 123456"))
    assert [r.id for r in rows] == [123456] and metrics["splitsRead"] == 1, metrics
    assert metrics["dataBytesRead"] * 10 <= unskipped["dataBytesRead"], (metrics, unskipped)
    # A 1% range reads one or two fragments.
    rows, metrics = scan_metrics(spark.sql(f"SELECT count(*) AS n FROM {table_name} WHERE id BETWEEN 50000 AND 51999"))
    assert rows[0].n == 2000 and metrics["splitsRead"] <= 2, metrics


def test_long_strings_keep_short_bounds_that_pylance_and_spark_prune_by(spark, warehouse, table_name):
    """Strings beyond 1 KiB keep a 1 KiB prefix as their zone's min and a raised prefix as its max; a
    zone whose max has no short form (no ASCII byte below 0x7f) keeps no max (unknown, never pruned)."""
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, s STRING) "
              "TBLPROPERTIES ('zonemap_columns' = 's', 'optimize_write' = 'false')")
    # Three zones of 8192 rows: long ASCII values, long all-non-ASCII values, and short ones.
    spark.sql(f"""INSERT INTO {table_name} SELECT /*+ COALESCE(1) */ id, CASE
        WHEN id < 8192 THEN concat(repeat('k', 1500), CAST(id AS STRING))
        WHEN id < 16384 THEN concat(repeat('\u00e9', 800), CAST(id AS STRING))
        ELSE concat('m', CAST(id AS STRING)) END FROM range(0, 20000)""")
    ds = lance.dataset(path)
    assert [i.name for i in ds.describe_indices()] == ["s_idx"]
    (segment,) = glob.glob(os.path.join(path, "_indices", "*", "zonemap.lance"))
    zones = sorted(LanceFileReader(segment).read_all().to_table().to_pylist(), key=lambda z: z["zone_start"])
    assert [(z["min"], z["max"]) for z in zones] == [
        ("k" * 1024, "k" * 1023 + "l"), ("\u00e9" * 512, None), ("m16384", "m19999")], [(z["min"][:9], z["max"]) for z in zones]
    probes = ["s = '" + "k" * 1500 + "77'", "s = '" + "\u00e9" * 800 + "9000'", "s = 'm19999'",
              "s > '" + "k" * 1500 + "9'", "s < 'l'", "s >= '\u00e9'"]
    for where in probes:
        assert_pylance_uses(path, where, "id")
        rows, metrics = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WHERE {where}"))
        plain, _ = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WITH ('data_skipping' = 'false') WHERE {where}"))
        assert sorted(r.id for r in rows) == sorted(r.id for r in plain) and plain, where
    # The short zone is skipped for a long ASCII key; the non-ASCII zone (no max) is never skipped.
    # (Rows, not bytes: the short zone's few bytes lie in the file's last 64 KB, which opening it read.)
    _, metrics = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WHERE s = '{'k' * 1500}77'"))
    _, whole = scan_metrics(spark.sql(f"SELECT id FROM {table_name} WITH ('data_skipping' = 'false') WHERE s = '{'k' * 1500}77'"))
    assert (metrics["numOutputRows"], whole["numOutputRows"]) == (2 * 8192, 20000), (metrics, whole)


def test_segments_fold_in_the_writes_own_version(spark, warehouse, table_name):
    """Every 16th write folds a zone map's segments into its own segment, in its own version: a table
    written 17 times has 18 versions and two segments per zone map, and pylance still uses them."""
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, s STRING)")
    for i in range(17):
        spark.sql(f"INSERT INTO {table_name} SELECT /*+ COALESCE(1) */ id, concat('s', id) FROM range({i * 100}, {i * 100 + 100})")
    ds = lance.dataset(path)
    assert ds.version == 18 and len(ds.get_fragments()) == 17
    assert {i.name: len(i.segments) for i in ds.describe_indices()} == {"id_idx": 2, "s_idx": 2}
    assert_covering(path, ["id", "s"])
    assert_pylance_uses(path, "id = 1234", "id")
    assert_pylance_uses(path, "s = 's77'", "id")
