"""BTREE, BITMAP and LABEL_LIST indices built by sparklance (CREATE INDEX ... USING and the
create_index procedure), with pylance 14 as the oracle: pylance lists them, plans its filters
through them, and answers what it answers without them; sparklance's own scans skip by them; both
stay right after our DELETE, UPDATE, MERGE, appends and compaction."""
import datetime

import lance
import pytest

from conftest import scan_metrics, table_path

# The filters pylance answers through each kind of index, on the columns of `make_table`.
FILTERS = {
    "k": ["k = 1234", "k < 40", "k >= 2990", "k BETWEEN 100 AND 120", "k IN (5, 77, 2999, 4000)", "k IS NULL",
          "k IS NOT NULL AND k > 2995"],
    "s": ["s = 'c3'", "s IN ('c0', 'c5')", "s IS NULL", "s > 'c6'"],
    "d": ["d = date '2024-01-05'", "d < date '2024-01-03'", "d IS NULL"],
}
SPARK_FILTERS = {
    "k": ["k = 1234", "k < 40", "k BETWEEN 100 AND 120", "k IN (5, 77, 2999, 4000)", "k IS NULL"],
    "s": ["s = 'c3'", "s IN ('c0', 'c5')", "s IS NULL"],
    "d": ["d = DATE'2024-01-05'", "d < DATE'2024-01-03'", "d IS NULL"],
}


def make_table(spark, table_name, rows=3000, per_file=750):
    """Fragments of `per_file` rows: k many distinct ints (every 97th NULL), s few strings
    (every 11th NULL), d dates (every 13th NULL), tags arrays of labels."""
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, s STRING, d DATE, tags ARRAY<STRING>) TBLPROPERTIES "
              f"('max_rows_per_file' = '{per_file}', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    append(spark, table_name, 0, rows)


def append(spark, table_name, start, end):
    spark.range(start, end).selectExpr(
        "CASE WHEN id % 97 = 0 THEN NULL ELSE id END AS k",
        "CASE WHEN id % 11 = 0 THEN NULL ELSE concat('c', CAST(id % 8 AS STRING)) END AS s",
        "CASE WHEN id % 13 = 0 THEN NULL ELSE date_add(DATE'2024-01-01', CAST(id % 10 AS INT)) END AS d",
        "CASE WHEN id % 17 = 0 THEN NULL WHEN id % 19 = 0 THEN array() "
        "ELSE array(concat('t', CAST(id % 5 AS STRING)), concat('t', CAST(id % 3 AS STRING))) END AS tags",
    ).coalesce(1).writeTo(table_name).append()


def assert_pylance_agrees(path, column, index_name, extra=()):
    ds = lance.dataset(path)
    for where in FILTERS[column] + list(extra):
        plan = ds.scanner(filter=where).explain_plan(True)
        assert f"@{index_name}" in plan and "ScalarIndexQuery" in plan, (where, plan)
        indexed = sorted(ds.to_table(filter=where).to_pylist(), key=repr)
        plain = sorted(ds.to_table(filter=where, use_scalar_index=False).to_pylist(), key=repr)
        assert indexed == plain, where


def assert_spark_agrees(spark, path, table_name, column):
    ds = lance.dataset(path)
    for where in SPARK_FILTERS[column]:
        got = sorted(r.k for r in spark.sql(f"SELECT k FROM {table_name} WHERE {where}").collect() if r.k is not None)
        nulls = spark.sql(f"SELECT count(*) FROM {table_name} WHERE {where} AND k IS NULL").head()[0]
        want_rows = ds.to_table(columns=["k"], filter=where.replace("DATE'", "date '"), use_scalar_index=False).to_pylist()
        assert got == sorted(r["k"] for r in want_rows if r["k"] is not None), where
        assert nulls == sum(1 for r in want_rows if r["k"] is None), where


def splits(spark, sql):
    return scan_metrics(spark.sql(sql))[1]["splitsRead"]


@pytest.mark.parametrize("kind,column", [("btree", "k"), ("btree", "s"), ("btree", "d"),
                                          ("bitmap", "s"), ("bitmap", "d"), ("bitmap", "k")])
def test_pylance_uses_what_create_index_builds(spark, warehouse, table_name, kind, column):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    spark.sql(f"CREATE INDEX {column}_{kind} ON {table_name} USING {kind} ({column})")
    [desc] = [d for d in lance.dataset(path).describe_indices() if d.name == f"{column}_{kind}"]
    assert desc.type_url.endswith("BTreeIndexDetails" if kind == "btree" else "BitmapIndexDetails")
    assert desc.num_rows_indexed == 3000 and desc.field_names == [column]
    [listed] = lance.dataset(path).list_indices()
    assert sorted(listed["fragment_ids"]) == [0, 1, 2, 3]
    assert_pylance_agrees(path, column, f"{column}_{kind}")
    assert_spark_agrees(spark, path, table_name, column)


def test_spark_skips_fragments_by_the_indices_it_builds(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    short = table_name.split(".", 1)[1]
    # Without an index every fragment is read.
    assert splits(spark, f"SELECT k FROM {table_name} WHERE k = 1234") == 4
    built = spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'k', index_type => 'BTREE', "
                      "name => 'k_bt', zone_size => 100)").head()
    assert (built.name, built.index_type, built.fragments, built.segments) == ("k_bt", "BTREE", 4, 1)
    ds = lance.dataset(path)
    page_lookup = lance.file.LanceFileReader(
        f"{path}/_indices/{ds.list_indices()[0]['uuid']}/page_lookup.lance").read_all().to_table()
    assert page_lookup.num_rows == 30 and page_lookup.schema.metadata[b"batch_size"] == b"100"
    assert splits(spark, f"SELECT k FROM {table_name} WHERE k = 1234") == 1
    assert splits(spark, f"SELECT k FROM {table_name} WHERE k IN (5, 2999)") == 2
    spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 's', index_type => 'BITMAP')")
    # Rows 0..749 are fragment 0; 'c0' rows are in every fragment, a value no row holds in none.
    assert splits(spark, f"SELECT k FROM {table_name} WHERE s = 'c9'") == 0
    assert splits(spark, f"SELECT k FROM {table_name} WHERE s = 'c0'") == 4
    assert_pylance_agrees(path, "k", "k_bt")
    assert_pylance_agrees(path, "s", "s_idx")


def test_bad_requests_are_refused_by_name(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name, rows=100, per_file=100)
    short = table_name.split(".", 1)[1]
    versions = len(lance.dataset(path).versions())
    with pytest.raises(Exception, match="unknown option page_size for a BTREE index"):
        spark.sql(f"CREATE INDEX b ON {table_name} USING btree (k) OPTIONS (page_size = 10)")
    with pytest.raises(Exception, match="zone_size applies to BTREE indices, not to BITMAP"):
        spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 's', index_type => 'BITMAP', zone_size => 5)")
    with pytest.raises(Exception, match="LABEL_LIST index needs a column of arrays"):
        spark.sql(f"CREATE INDEX b ON {table_name} USING label_list (s)")
    with pytest.raises(Exception, match="cannot have a BITMAP index"):
        spark.sql(f"CREATE INDEX b ON {table_name} USING bitmap (tags)")
    assert len(lance.dataset(path).versions()) == versions


def test_indices_stay_right_across_dml_appends_and_compaction(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    short = table_name.split(".", 1)[1]
    spark.sql(f"CREATE INDEX k_bt ON {table_name} USING btree (k)")
    spark.sql(f"CREATE INDEX s_bm ON {table_name} USING bitmap (s)")

    def check():
        assert_pylance_agrees(path, "k", "k_bt")
        assert_pylance_agrees(path, "s", "s_bm")
        assert_spark_agrees(spark, path, table_name, "k")
        assert_spark_agrees(spark, path, table_name, "s")

    def coverage():
        return {i["name"]: sorted(i["fragment_ids"]) for i in lance.dataset(path).list_indices()}

    check()
    spark.sql(f"DELETE FROM {table_name} WHERE k BETWEEN 100 AND 200 OR s = 'c3'")
    check()
    assert coverage() == {"k_bt": [0, 1, 2, 3], "s_bm": [0, 1, 2, 3]}
    spark.sql(f"UPDATE {table_name} SET k = k + 100000, s = 'c9' WHERE k % 10 = 1")
    check()
    spark.sql(f"MERGE INTO {table_name} t USING (SELECT id AS k, 'c1' AS s FROM range(2990, 3100)) src ON t.k = src.k "
              "WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT (k, s) VALUES (src.k, src.s)")
    check()
    append(spark, table_name, 5000, 5600)
    check()
    before = coverage()
    spark.sql(f"CALL lance.system.compact(table => '{short}', target_rows_per_fragment => 100000)")
    check()
    # Fragments the indices cover are left as they are; the uncovered ones may be merged.
    assert coverage() == before
    fragments = {f.fragment_id for f in lance.dataset(path).get_fragments()}
    assert set(before["k_bt"]) <= fragments
    assert splits(spark, f"SELECT k FROM {table_name} WHERE k = 1234") <= 1 + len(fragments - set(before["k_bt"]))


def test_label_list_answers_array_filters(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    spark.sql(f"CREATE INDEX tags_ll ON {table_name} USING label_list (tags)")
    ds = lance.dataset(path)
    [desc] = ds.describe_indices()
    assert desc.type_url.endswith("LabelListIndexDetails") and desc.num_rows_indexed == 3000
    for where in ["array_has_any(tags, ['t1'])", "array_has_any(tags, ['t0', 't4'])", "array_has_all(tags, ['t1', 't2'])",
                  "array_has_all(tags, ['t0'])", "array_has_any(tags, ['nope'])"]:
        plan = ds.scanner(filter=where).explain_plan(True)
        assert "@tags_ll" in plan and "ScalarIndexQuery" in plan, (where, plan)
        indexed = sorted(ds.to_table(filter=where).to_pylist(), key=repr)
        plain = sorted(ds.to_table(filter=where, use_scalar_index=False).to_pylist(), key=repr)
        assert indexed == plain and len(plain) > 0 or "nope" in where, where
    spark.sql(f"DELETE FROM {table_name} WHERE k < 500")
    ds = lance.dataset(path)
    where = "array_has_any(tags, ['t1'])"
    assert sorted(ds.to_table(filter=where).to_pylist(), key=repr) == \
        sorted(ds.to_table(filter=where, use_scalar_index=False).to_pylist(), key=repr)


def test_array_contains_skips_by_a_label_list_pylance_built(spark, warehouse, table_name):
    """A LABEL_LIST pylance builds lets Spark's array_contains read only the fragments holding the
    value, with the rows a scan without skipping returns (and pylance's array_has_any)."""
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, tags ARRAY<STRING>) TBLPROPERTIES "
              "('max_rows_per_file' = '500', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(0, 2000).selectExpr(
        "id AS k", "CASE WHEN id % 23 = 0 THEN NULL WHEN id % 29 = 0 THEN array() "
        "ELSE array(concat('f', CAST(id DIV 500 AS STRING)), IF(id % 2 = 0, 'even', 'odd')) END AS tags",
    ).coalesce(1).writeTo(table_name).append()
    lance.dataset(path).create_scalar_index("tags", "LABEL_LIST", name="tags_ll")
    ds = lance.dataset(path)
    for value, fragments in [("f1", 1), ("even", 4), ("nowhere", 0)]:
        sql = f"SELECT k FROM {table_name} WHERE array_contains(tags, '{value}')"
        got = sorted(r.k for r in spark.sql(sql).collect())
        plain = sorted(r.k for r in spark.read.option("data_skipping", "false").table(table_name)
                       .where(f"array_contains(tags, '{value}')").collect())
        want = sorted(r["k"] for r in ds.to_table(columns=["k"], filter=f"array_has_any(tags, ['{value}'])").to_pylist())
        assert got == plain == want, value
        assert splits(spark, sql) == fragments, value


def test_optimize_index_extends_them_as_pylance_does(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    short = table_name.split(".", 1)[1]
    spark.sql(f"CREATE INDEX k_bt ON {table_name} USING btree (k)")
    spark.sql(f"CREATE INDEX s_bm ON {table_name} USING bitmap (s)")
    spark.sql(f"CREATE INDEX tags_ll ON {table_name} USING label_list (tags)")
    append(spark, table_name, 3000, 3600)
    done = spark.sql(f"CALL lance.system.optimize_index(table => '{short}')").head()
    assert sorted(done.indices) == ["k_bt", "s_bm", "tags_ll"] and done.segments_added == 3 and done.segments_removed == 0
    ds = lance.dataset(path)
    for d in ds.describe_indices():
        assert len(d.segments) == 2 and d.num_rows_indexed == 3600, d
    segments = {}
    for i in ds.list_indices():
        segments.setdefault(i["name"], []).append(sorted(i["fragment_ids"]))
    assert all(sorted(s) == [[0, 1, 2, 3], [4]] for s in segments.values()), segments
    assert_pylance_agrees(path, "k", "k_bt", extra=["k = 3300", "k BETWEEN 2990 AND 3010"])
    assert_pylance_agrees(path, "s", "s_bm")
    assert ds.to_table(filter="k = 3300").num_rows == 1
    where = "array_has_any(tags, ['t1'])"
    assert "@tags_ll" in ds.scanner(filter=where).explain_plan(True)
    assert sorted(ds.to_table(filter=where).to_pylist(), key=repr) == \
        sorted(ds.to_table(filter=where, use_scalar_index=False).to_pylist(), key=repr)
    assert splits(spark, f"SELECT k FROM {table_name} WHERE k = 3300") == 1
    merged = spark.sql(f"CALL lance.system.optimize_index(table => '{short}', index_names => array('k_bt', 's_bm'), "
                       "num_indices_to_merge => 2)").head()
    assert merged.segments_added == 2 and merged.segments_removed == 4
    ds = lance.dataset(path)
    assert {d.name: len(d.segments) for d in ds.describe_indices()} == {"k_bt": 1, "s_bm": 1, "tags_ll": 2}
    assert_pylance_agrees(path, "k", "k_bt")
    assert_pylance_agrees(path, "s", "s_bm")


@pytest.mark.parametrize("kind", ["btree", "bitmap"])
def test_other_types_agree_with_pylance(spark, warehouse, table_name, kind):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, f DOUBLE, ts TIMESTAMP, b BOOLEAN, m DECIMAL(10, 2), i INT) "
              "TBLPROPERTIES ('max_rows_per_file' = '500', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(0, 1500).selectExpr(
        "id AS k",
        "CASE WHEN id % 50 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 7 = 0 THEN NULL WHEN id % 9 = 0 THEN -0.0 "
        "ELSE (id % 40) / 4.0 - 3 END AS f",
        "CASE WHEN id % 11 = 0 THEN NULL ELSE timestamp_micros(1700000000000000 + (id % 30) * 1000000) END AS ts",
        "CASE WHEN id % 13 = 0 THEN NULL ELSE id % 3 = 0 END AS b",
        "CASE WHEN id % 17 = 0 THEN NULL ELSE CAST((id % 25) * 1.25 AS DECIMAL(10, 2)) END AS m",
        "CASE WHEN id % 19 = 0 THEN NULL ELSE CAST(id % 100 - 50 AS INT) END AS i",
    ).coalesce(1).writeTo(table_name).append()
    filters = {
        "f": ["f = 2.5", "f < -1", "f >= 5", "f = 0.0", "f IS NULL", "f IN (1.0, 3.0)"],
        "ts": ["ts = TIMESTAMP '2023-11-14 22:13:25+00:00'", "ts > TIMESTAMP '2023-11-14 22:13:40+00:00'", "ts IS NULL"],
        "b": ["b = true", "b = false", "b IS NULL"],
        "m": ["m = CAST(5 AS DECIMAL(10,2))", "m BETWEEN CAST(2 AS DECIMAL(10,2)) AND CAST(10 AS DECIMAL(10,2))", "m IS NULL"],
        "i": ["i = -3", "i < -40", "i IN (0, 49)", "i IS NULL"],
    }
    for column, wheres in filters.items():
        spark.sql(f"CREATE INDEX {column}_ix ON {table_name} USING {kind} ({column})")
        ds = lance.dataset(path)
        for where in wheres:
            assert f"@{column}_ix" in ds.scanner(filter=where).explain_plan(True), where
            indexed = sorted(r["k"] for r in ds.to_table(columns=["k"], filter=where).to_pylist())
            plain = sorted(r["k"] for r in ds.to_table(columns=["k"], filter=where, use_scalar_index=False).to_pylist())
            assert indexed == plain, (column, where)
        for where in wheres:
            spark_where = where.replace("+00:00", "")
            got = sorted(r.k for r in spark.sql(f"SELECT k FROM {table_name} WHERE {spark_where}").collect())
            plain = sorted(r.k for r in spark.read.option("data_skipping", "false").table(table_name)
                           .where(spark_where).collect())
            assert got == plain, (column, where)


def test_btree_on_a_table_with_stable_row_ids(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, s STRING, d DATE, tags ARRAY<STRING>) TBLPROPERTIES "
              "('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '750', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    append(spark, table_name, 0, 3000)
    spark.sql(f"UPDATE {table_name} SET k = k + 100000 WHERE k % 10 = 1")
    spark.sql(f"CREATE INDEX k_bt ON {table_name} USING btree (k)")
    assert_pylance_agrees(path, "k", "k_bt", extra=["k = 100011", "k > 100000"])
    assert_spark_agrees(spark, path, table_name, "k")
    with pytest.raises(Exception, match="does not build BITMAP indices on tables with stable row ids"):
        spark.sql(f"CREATE INDEX s_bm ON {table_name} USING bitmap (s)")


def test_an_in_place_column_rewrite_takes_its_fragments_out_of_that_columns_indices(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    make_table(spark, table_name)
    spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('rewrite_mode' = 'columns')")
    spark.sql(f"CREATE INDEX k_bt ON {table_name} USING btree (k)")
    spark.sql(f"CREATE INDEX s_bm ON {table_name} USING bitmap (s)")
    # Rows 0..749 are fragment 0: only its s column is rewritten in place.
    spark.sql(f"UPDATE {table_name} SET s = 'c9' WHERE k < 700")
    coverage = {i["name"]: sorted(i["fragment_ids"]) for i in lance.dataset(path).list_indices()}
    assert coverage == {"k_bt": [0, 1, 2, 3], "s_bm": [1, 2, 3]}, coverage
    assert_pylance_agrees(path, "k", "k_bt")
    assert_pylance_agrees(path, "s", "s_bm", extra=["s = 'c9'"])
    assert_spark_agrees(spark, path, table_name, "s")
    assert spark.sql(f"SELECT count(*) FROM {table_name} WHERE s = 'c9'").head()[0] == \
        lance.dataset(path).count_rows("s = 'c9'") > 600


def test_label_list_of_integers_after_an_update_and_optimize(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    short = table_name.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, n ARRAY<BIGINT>) TBLPROPERTIES "
              "('max_rows_per_file' = '400', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(0, 1200).selectExpr(
        "id AS k", "CASE WHEN id % 23 = 0 THEN NULL WHEN id % 29 = 0 THEN array(CAST(NULL AS BIGINT), 1) "
        "ELSE array(id % 4, id % 7 + 10) END AS n").coalesce(1).writeTo(table_name).append()
    spark.sql(f"CREATE INDEX n_ll ON {table_name} USING label_list (n)")
    spark.sql(f"UPDATE {table_name} SET n = array(99) WHERE k % 100 = 5")
    spark.sql(f"CALL lance.system.optimize_index(table => '{short}', name => 'n_ll')")
    ds = lance.dataset(path)
    assert len(ds.describe_indices()[0].segments) == 2
    for where in ["array_has_any(n, [1, 12])", "array_has_all(n, [3, 10])", "array_has_any(n, [99])", "array_has_all(n, [1])"]:
        assert "@n_ll" in ds.scanner(filter=where).explain_plan(True), where
        indexed = sorted(r["k"] for r in ds.to_table(columns=["k"], filter=where).to_pylist())
        plain = sorted(r["k"] for r in ds.to_table(columns=["k"], filter=where, use_scalar_index=False).to_pylist())
        assert indexed == plain and plain, where
    assert ds.count_rows("array_has_any(n, [99])") == 12
