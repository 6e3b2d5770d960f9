"""Stable row ids across writers: tables with enable_stable_row_ids written by Spark, by pylance, and
by both in turn carry the same _rowid / _row_created_at_version / _row_last_updated_at_version for
either reader, and the lineage rules hold whichever writer made a commit: an updated row keeps its
row id and creation version, a new row gets an id no row ever had. CHANGES reads pylance's commits
too. A table without stable row ids refuses CHANGES and the property cannot be switched on later."""
from collections import Counter

import lance
import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

import sparklance
from conftest import table_path

LINEAGE = ["_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
STABLE = "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '16')"
CHANGE_COLS = ["id", "v", "s", "_rowid", "_change_type", "_commit_version"]


def _spark_rows(spark, t, extra=()):
    """{id: (id, v, s, _rowid, created, updated, *extra)} as Spark reads them."""
    cols = ["id", "v", "s"] + LINEAGE + list(extra)
    rows = spark.sql(f"SELECT {', '.join(cols)} FROM {t}").collect()
    out = {row.id: tuple(row) for row in rows}
    assert len(out) == len(rows), "duplicate ids"
    return out


def _lance_rows(path, extra=()):
    """The same as pylance reads them."""
    cols = ["id", "v", "s"] + LINEAGE + list(extra)
    tbl = lance.dataset(path).to_table(columns=cols)
    out = {row[0]: row for row in zip(*(tbl.column(c).to_pylist() for c in cols))}
    assert len(out) == tbl.num_rows, "duplicate ids"
    return out


def _same_for_both(spark, t, path):
    """Spark and pylance read identical rows and lineage columns (and row addresses); returns them."""
    from_spark = _spark_rows(spark, t, ["_rowaddr"])
    from_lance = _lance_rows(path, ["_rowaddr"])
    assert sorted(from_spark.values()) == sorted(from_lance.values())
    # with_row_id=True is the other way pylance exposes the stable id.
    tbl = lance.dataset(path).to_table(columns=["id"], with_row_id=True)
    assert dict(zip(tbl.column("id").to_pylist(), tbl.column("_rowid").to_pylist())) == \
        {k: row[3] for k, row in from_spark.items()}
    rowids = [row[3] for row in from_spark.values()]
    assert len(set(rowids)) == len(rowids), "two live rows share a row id"
    return {k: row[:6] for k, row in from_spark.items()}


def _lineage(rows):
    """{id: (_rowid, created, updated)}"""
    return {k: row[3:6] for k, row in rows.items()}


def _changes(spark, query):
    return Counter(tuple(row)[:6] for row in spark.sql(query).select(*CHANGE_COLS).collect())


def _error(fn):
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        fn()
    return str(err.value)


def test_spark_writes_pylance_reads_lineage(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v BIGINT, s STRING) {STABLE}")              # v1
    spark.sql(f"INSERT INTO {t} SELECT id, id * 10, concat('s', id) FROM range(0, 60)")             # v2
    spark.sql(f"UPDATE {t} SET v = v + 1 WHERE id % 7 = 0")                                          # v3
    spark.createDataFrame([(k, -k, "m") for k in [5, 6, 7, 10, 11, 100, 101, 102]],
                          "id BIGINT, v BIGINT, s STRING").createOrReplaceTempView("src_interop")
    spark.sql(f"MERGE INTO {t} t USING src_interop s ON t.id = s.id "                                 # v4
              "WHEN MATCHED AND s.id >= 10 THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s "
              "WHEN NOT MATCHED THEN INSERT * "
              "WHEN NOT MATCHED BY SOURCE AND t.id IN (50, 51) THEN UPDATE SET s = 'by-source'")
    spark.sql(f"DELETE FROM {t} WHERE id BETWEEN 20 AND 29")                                         # v5
    spark.sql(f"INSERT INTO {t} VALUES (200, 2000, 'late'), (201, NULL, NULL)")                      # v6

    ds = lance.dataset(path)
    assert ds.has_stable_row_ids
    assert ds.version == 6
    assert len(ds.get_fragments()) >= 4
    rows = _same_for_both(spark, t, path)

    # The lineage each row should have, by the statements above.
    expected = {}
    for k in list(range(60)) + [100, 101, 102, 200, 201]:
        if k in (10, 11) or 20 <= k <= 29:
            continue
        created = 2 if k < 60 else 4 if k < 200 else 6
        updated = created
        if k < 60 and k % 7 == 0:
            updated = 3
        if k in (5, 6, 7, 50, 51):
            updated = 4
        expected[k] = (created, updated)
    assert {k: row[4:6] for k, row in rows.items()} == expected
    assert rows[7][1:3] == (-7, "m") and rows[50][2] == "by-source" and rows[14][1] == 141
    # Row ids: the 60 first rows hold ids among 0..59; later inserts come after them, in commit order.
    first = {k: row[3] for k, row in rows.items() if k < 60}
    merged = {k: row[3] for k, row in rows.items() if 100 <= k < 200}
    late = {k: row[3] for k, row in rows.items() if k >= 200}
    assert max(first.values()) < min(merged.values()) and max(merged.values()) < min(late.values())
    assert set(first.values()) <= set(range(60))
    # pylance fetches rows by the ids Spark reports.
    picks = [first[3], first[7], merged[101], late[201]]
    taken = lance.dataset(path)._take_rows(picks, columns=["id"]).column("id").to_pylist()
    assert taken == [3, 7, 101, 201]


def test_pylance_writes_spark_reads_lineage(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)

    def data(ids, v=lambda k: k, s=lambda k: f"p{k}"):
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v(k) for k in ids], pa.int64()),
                         "s": pa.array([s(k) for k in ids], pa.string())})

    lance.write_dataset(data(range(40)), path, enable_stable_row_ids=True, max_rows_per_file=8)   # v1
    lance.write_dataset(data(range(40, 50)), path, mode="append")                                   # v2
    lance.dataset(path).update({"v": "v + 100"}, where="id % 5 = 0")                                # v3
    lance.dataset(path).delete("id >= 10 AND id < 15")                                              # v4
    (lance.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()  # v5
     .execute(data([1, 2, 3, 60, 61], v=lambda k: -k, s=lambda k: "merged")))
    ds = lance.dataset(path)
    assert ds.has_stable_row_ids and ds.version == 5

    rows = _same_for_both(spark, t, path)
    expected = {}
    for k in [k for k in range(50) if not 10 <= k < 15] + [60, 61]:
        created = 1 if k < 40 else 2 if k < 50 else 5
        updated = 5 if k in (1, 2, 3) else 3 if k < 50 and k % 5 == 0 else created
        expected[k] = (created, updated)
    assert {k: row[4:6] for k, row in rows.items()} == expected
    assert rows[1][1:3] == (-1, "merged") and rows[45][1] == 145
    assert max(row[3] for k, row in rows.items() if k < 50) < min(rows[60][3], rows[61][3])
    assert [row.version for row in sparklance.history(spark, t).orderBy("version").collect()] == [1, 2, 3, 4, 5]


def test_mixed_writers_keep_lineage(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)

    def data(ids, v=lambda k: k, s=lambda k: f"p{k}"):
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v(k) for k in ids], pa.int64()),
                         "s": pa.array([s(k) for k in ids], pa.string())})

    lance.write_dataset(data(range(30)), path, enable_stable_row_ids=True, max_rows_per_file=10)  # v1
    born = _lineage(_same_for_both(spark, t, path))
    assert all(c == u == 1 for _, c, u in born.values())
    seen = {rid for rid, _, _ in born.values()}

    def new_ids_fresh(rows, keys):
        ids = [rows[k][3] for k in keys]
        assert len(set(ids)) == len(ids) and not set(ids) & seen and min(ids) > max(seen), (ids, max(seen))
        seen.update(ids)

    spark.sql(f"UPDATE {t} SET v = -v WHERE id < 5")                                                # v2
    spark.createDataFrame([(5, 55, "m"), (6, 66, "m"), (7, None, None), (100, 1, "n"), (101, 2, "n")],
                          "id BIGINT, v BIGINT, s STRING").createOrReplaceTempView("src_mixed")
    spark.sql(f"MERGE INTO {t} t USING src_mixed s ON t.id = s.id "                                  # v3
              "WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET * "
              "WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"INSERT INTO {t} VALUES (200, 200, 'spark'), (201, 201, 'spark')")                  # v4
    rows = _same_for_both(spark, t, path)
    new_ids_fresh(rows, [100, 101])
    new_ids_fresh(rows, [200, 201])
    assert rows[100][3] < rows[200][3]

    lance.write_dataset(data(range(300, 305)), path, mode="append")                                 # v5
    lance.dataset(path).update({"s": "'py'"}, where="id IN (0, 5, 100, 200, 20)")                   # v6
    (lance.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()  # v7
     .execute(data([6, 201, 400], v=lambda k: k * 2, s=lambda k: "pm")))
    spark.sql(f"DELETE FROM {t} WHERE id = 1")                                                       # v8
    assert lance.dataset(path).version == 8

    rows = _same_for_both(spark, t, path)
    new_ids_fresh(rows, list(range(300, 305)))
    new_ids_fresh(rows, [400])
    lineage = _lineage(rows)
    # Rows pylance created keep the id pylance gave them through Spark's and pylance's updates.
    for k in [0, 2, 3, 4, 5, 6] + list(range(8, 30)):
        assert lineage[k][:2] == (born[k][0], 1), k
    assert 1 not in rows and 7 not in rows
    expected_updated = {0: 6, 2: 2, 3: 2, 4: 2, 5: 6, 6: 7, 20: 6, 100: 6, 101: 3, 200: 6, 201: 7, 400: 7}
    for k, row in rows.items():
        created = 1 if k < 30 else 3 if k in (100, 101) else 4 if k in (200, 201) else 5 if k < 400 else 7
        assert row[4:6] == (created, expected_updated.get(k, created)), (k, row)
    assert rows[0][1:3] == (0, "py") and rows[5][1:3] == (55, "py") and rows[6][1:3] == (12, "pm")

    # Change data across writers: pylance's update (v6) and merge (v7), Spark's delete (v8).
    got = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 6 TO VERSION 8 WITH (computeUpdates = 'true')")
    want = Counter()
    before6 = {0: (0, "p0"), 5: (55, "m"), 20: (20, "p20"), 100: (1, "n"), 200: (200, "spark")}
    for k, (v, s) in before6.items():
        want[(k, v, s, rows[k][3], "update_preimage", 6)] += 1
        want[(k, v, "py", rows[k][3], "update_postimage", 6)] += 1
    for k, (v, s) in {6: (66, "m"), 201: (201, "spark")}.items():
        want[(k, v, s, rows[k][3], "update_preimage", 7)] += 1
        want[(k, k * 2, "pm", rows[k][3], "update_postimage", 7)] += 1
    want[(400, 800, "pm", rows[400][3], "insert", 7)] += 1
    want[(1, -1, "p1", born[1][0], "delete", 8)] += 1
    assert got == want


def test_changes_of_pylance_commits(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    ids = list(range(20))
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64()),
                                  "s": pa.array([f"s{k}" for k in ids])}),
                        path, enable_stable_row_ids=True, max_rows_per_file=6)                     # v1
    rid = {row[0]: row[1] for row in zip(*(lance.dataset(path).to_table(columns=["id", "_rowid"]).column(c)
                                            .to_pylist() for c in ["id", "_rowid"]))}
    lance.dataset(path).update({"v": "v * 10", "s": "'up'"}, where="id < 3")                       # v2
    lance.dataset(path).delete("id >= 17 OR id = 1")                                                # v3
    assert lance.dataset(path).version == 3

    inserts = Counter({(k, k, f"s{k}", rid[k], "insert", 1): 1 for k in ids})
    upd = {k: ((k, k, f"s{k}", rid[k]), (k, k * 10, "up", rid[k])) for k in range(3)}
    dels3 = Counter({(1, 10, "up", rid[1], "delete", 3): 1,
                     **{(k, k, f"s{k}", rid[k], "delete", 3): 1 for k in (17, 18, 19)}})

    def updates(pre, post):
        return Counter({**{(*old, pre, 2): 1 for old, _ in upd.values()},
                        **{(*new, post, 2): 1 for _, new in upd.values()}})

    got = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 1 TO VERSION 3")
    assert got == inserts + updates("delete", "insert") + dels3
    got = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 1 EXCLUSIVE WITH (computeUpdates = 'true')")
    assert got == updates("update_preimage", "update_postimage") + dels3
    got = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 2 TO VERSION 3 EXCLUSIVE")
    assert got == updates("delete", "insert")
    # Net: 0 and 2 updated; 1 updated then deleted is a delete of its value before the range.
    got = Counter(tuple(row)[:6] for row in
                  sparklance.changes(spark, t, 2, net_changes=True).select(*CHANGE_COLS).collect())
    want = Counter({(*upd[0][0], "update_preimage", 2): 1, (*upd[0][1], "update_postimage", 2): 1,
                    (*upd[2][0], "update_preimage", 2): 1, (*upd[2][1], "update_postimage", 2): 1,
                    (1, 1, "s1", rid[1], "delete", 2): 1,
                    **{(k, k, f"s{k}", rid[k], "delete", 3): 1 for k in (17, 18, 19)}})
    assert got == want
    # Inserted at 1 and deleted at 3: nothing, net, over 1..3.
    got = Counter(row._change_type for row in sparklance.changes(spark, t, 1, 3, net_changes=True).collect())
    assert got == Counter({"insert": 16})
    history = sparklance.history(spark, t).orderBy("version").collect()
    assert [(h.version, h.rows_added, h.rows_deleted, h.rows) for h in history] == \
        [(1, 20, 0, 20), (2, 3, 3, 20), (3, 0, 4, 16)]


def test_compaction_moves_rows_without_changing_them(spark, warehouse, table_name):
    """pylance compaction rewrites fragments; ids and versions move with the rows, so the
    compaction commit has no changes, and Spark reads and updates the compacted table."""
    t, path = table_name, table_path(warehouse, table_name)
    ids = list(range(40))
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64()),
                                  "s": pa.array([f"s{k}" for k in ids])}),
                        path, enable_stable_row_ids=True, max_rows_per_file=5)                     # v1
    spark.sql(f"UPDATE {t} SET v = -v WHERE id % 7 = 0")                                          # v2
    spark.sql(f"DELETE FROM {t} WHERE id % 5 = 1")                                               # v3
    before = _same_for_both(spark, t, path)
    # pylance commits a compaction as two versions: fragment ids reserved (v4), then the Rewrite (v5).
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=1000)
    assert lance.dataset(path).version == 5
    assert len(lance.dataset(path).get_fragments()) < 8
    assert _same_for_both(spark, t, path) == before
    assert _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 4 TO VERSION 5") == Counter()
    spark.sql(f"UPDATE {t} SET s = 'after' WHERE id = 14")                                        # v6
    rows = _same_for_both(spark, t, path)
    assert rows[14][3:5] == before[14][3:5] and rows[14][5] == 6
    got = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 3 EXCLUSIVE WITH (computeUpdates = 'true')")
    assert got == Counter({(14, -14, "s14", before[14][3], "update_preimage", 6): 1,
                           (14, -14, "after", before[14][3], "update_postimage", 6): 1})


def test_table_without_stable_row_ids(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '16')")
    spark.sql(f"INSERT INTO {t} SELECT id, id, 'x' FROM range(50)")
    spark.sql(f"DELETE FROM {t} WHERE id % 3 = 0")
    spark.sql(f"UPDATE {t} SET v = -v WHERE id < 10")
    assert not lance.dataset(path).has_stable_row_ids

    message = _error(lambda: spark.sql(f"SELECT * FROM {t} CHANGES FROM VERSION 1").collect())
    assert "stable row ids" in message
    message = _error(lambda: sparklance.changes(spark, t, 1, 3).collect())
    assert "stable row ids" in message
    message = _error(lambda: spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('enable_stable_row_ids' = 'true')"))
    assert "enable_stable_row_ids' of " in message and "cannot be changed on an existing table" in message
    assert not lance.dataset(path).has_stable_row_ids
    # Without stable ids a row's id is its address.
    rows = spark.sql(f"SELECT id, _rowid, _rowaddr FROM {t}").collect()
    assert len(rows) == 50 - 17
    assert all(row._rowid == row._rowaddr for row in rows)
    tbl = lance.dataset(path).to_table(columns=["id", "_rowid", "_rowaddr"])
    assert sorted(tuple(row) for row in rows) == sorted(zip(*(tbl.column(c).to_pylist() for c in tbl.column_names)))

    # Nor can a stable table drop the property.
    stable = t + "_stable"
    spark.sql(f"CREATE TABLE {stable} (id BIGINT) {STABLE}")
    message = _error(lambda: spark.sql(f"ALTER TABLE {stable} SET TBLPROPERTIES ('enable_stable_row_ids' = 'false')"))
    assert "enable_stable_row_ids' of " in message and "cannot be changed on an existing table" in message
    assert lance.dataset(table_path(warehouse, stable)).has_stable_row_ids
