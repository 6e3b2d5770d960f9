"""The change-data stream over tables pylance 14 and Spark write in turn.

`readStream.option("readChangeFeed", "true")`, `readStream.changes(...)` and `STREAM ... CHANGES` stream,
batch by batch, what the batch `CHANGES FROM VERSION a TO VERSION b` gives for each batch's commits
(inserts, deletes, update images; compactions give nothing), and their union over the whole run equals
the batch read of the whole range; replaying the stream's changes in order rebuilds the table pylance
reads. A restart goes on from the checkpoint without duplicates, limits cut a backlog into several
AvailableNow batches, and a vacuum that removed the versions a stopped query was to read makes its
restart fail naming the oldest version left and how to start again.
"""
import datetime

import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException, StreamingQueryException

from conftest import table_path

COLS = ["id", "v", "_rowid", "_change_type", "_commit_version"]


def _rows(ids, tag):
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def _run(df, checkpoint):
    """Runs the streaming DataFrame `df` under Trigger.AvailableNow until it has read what is there;
    returns each batch's rows (tuples of COLS), in batch order."""
    got = []
    query = (df.writeStream.option("checkpointLocation", str(checkpoint))
             .foreachBatch(lambda batch, batch_id: got.append((batch_id, [tuple(r) for r in batch.select(*COLS).collect()])))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return [rows for _, rows in sorted(got)]


def _changes(spark, query):
    return sorted(tuple(r) for r in spark.sql(query).select(*COLS).collect())


def _latest(path):
    return lance.dataset(path).version


def test_pylance_and_spark_commits_stream_as_batch_changes(spark, warehouse, table_name, tmp_path):
    t, path = table_name, table_path(warehouse, table_name)
    lance.write_dataset(_rows(range(12), "a"), path, enable_stable_row_ids=True, max_rows_per_file=4)  # v1
    spark.sql(f"INSERT INTO {t} VALUES (100, 's100'), (101, 's101')")                                  # v2
    lance.dataset(path).update({"v": "concat(v, '+')"}, where="id % 3 = 0")                            # v3
    spark.sql(f"DELETE FROM {t} WHERE id % 5 = 1")                                                     # v4
    ckpt = tmp_path / "ckpt"

    def stream():
        return (spark.readStream.option("readChangeFeed", "true").option("startingVersion", "1")
                .option("maxFilesPerTrigger", "2").table(t))

    first = _run(stream(), ckpt)
    upto = _latest(path)
    assert sorted(r for b in first for r in b) == _changes(
        spark, f"SELECT * FROM {t} CHANGES FROM VERSION 1 TO VERSION {upto} WITH (computeUpdates = 'true')")

    (lance.dataset(path).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()   # pylance upsert
     .execute(_rows([2, 3, 200], "m")))
    before_compaction = _latest(path)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=100)                           # no rows
    compactions = set(range(before_compaction + 1, _latest(path) + 1))
    assert compactions
    spark.sql(f"""MERGE INTO {t} t USING (SELECT * FROM VALUES (6L, 'x'), (7L, 'y'), (300L, 'z') AS s(id, v)) s
                  ON t.id = s.id WHEN MATCHED AND s.id = 7 THEN DELETE WHEN MATCHED THEN UPDATE SET *
                  WHEN NOT MATCHED THEN INSERT *""")
    spark.sql(f"UPDATE {t} SET v = 'u' WHERE id = 200")
    second = _run(stream(), ckpt)
    last = _latest(path)
    # The restart goes on where the first run stopped: nothing twice, nothing left out.
    assert sorted(r for b in second for r in b) == _changes(
        spark, f"SELECT * FROM {t} CHANGES FROM VERSION {upto + 1} TO VERSION {last} WITH (computeUpdates = 'true')")
    batches = first + second
    assert len([b for b in batches if b]) >= 6, [sorted({r[4] for r in b}) for b in batches]
    assert not any(r[4] in compactions for b in batches for r in b)
    # Each batch is the batch read of its commits.
    for rows in batches:
        if rows:
            versions = sorted({r[4] for r in rows})
            assert sorted(rows) == _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION {versions[0]} TO VERSION "
                                                   f"{versions[-1]} WITH (computeUpdates = 'true')")

    # The changes in commit order rebuild the table as pylance reads it.
    mirror = {}
    for rows in batches:
        for id_, v, rowid, kind, _ in sorted(rows, key=lambda r: (r[4], r[3] in ("insert", "update_postimage"))):
            if kind in ("delete", "update_preimage"):
                assert mirror.pop(rowid) == (id_, v)
            else:
                mirror[rowid] = (id_, v)
    table = lance.dataset(path).to_table(columns=["id", "v"], with_row_id=True)
    assert mirror == {r: (i, v) for i, v, r in zip(table.column("id").to_pylist(), table.column("v").to_pylist(),
                                                   table.column("_rowid").to_pylist())}


def test_changes_api_and_stream_sql_and_the_default_start(spark, warehouse, table_name, tmp_path):
    t, path = table_name, table_path(warehouse, table_name)
    lance.write_dataset(_rows(range(5), "a"), path, enable_stable_row_ids=True)                       # v1
    lance.dataset(path).delete("id = 0")                                                               # v2
    expected = _changes(spark, f"SELECT * FROM {t} CHANGES FROM VERSION 2")
    via_api = _run(spark.readStream.option("startingVersion", "2").changes(t), tmp_path / "api")
    via_sql = _run(spark.sql(f"SELECT * FROM STREAM {t} CHANGES FROM VERSION 2"), tmp_path / "sql")
    assert sorted(r for b in via_api for r in b) == expected == sorted(r for b in via_sql for r in b)
    assert [r[3] for r in expected] == ["delete"]
    # Without a start: the table as it is, as inserts at its version (Delta's initial snapshot), then changes.
    ckpt = tmp_path / "default"
    snapshot = _run(spark.readStream.changes(t), ckpt)
    assert sorted((r[0], r[3], r[4]) for b in snapshot for r in b) == [(i, "insert", 2) for i in range(1, 5)]
    lance.write_dataset(_rows([9], "n"), path, mode="append")                                         # v3
    assert [(r[0], r[3], r[4]) for b in _run(spark.readStream.changes(t), ckpt) for r in b] == [(9, "insert", 3)]


def test_vacuumed_versions_and_tables_without_row_ids_fail_clearly(spark, warehouse, table_name, tmp_path):
    t, path = table_name, table_path(warehouse, table_name)
    lance.write_dataset(_rows(range(3), "a"), path, enable_stable_row_ids=True)                       # v1
    ckpt = tmp_path / "ckpt"
    assert len(_run(spark.readStream.option("startingVersion", "1").changes(t), ckpt)[0]) == 3
    for i in range(3, 6):
        lance.write_dataset(_rows([i], "b"), path, mode="append")                                     # v2..v4
    lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0))
    oldest = _latest(path)
    with pytest.raises(StreamingQueryException) as e:
        _run(spark.readStream.option("startingVersion", "1").changes(t), ckpt)
    message = str(e.value)
    assert "LANCE_VERSION_REMOVED" in message and "no longer has version 1" in message, message
    assert f"the oldest version left is {oldest}" in message and "startingVersion latest" in message, message

    plain = table_path(warehouse, table_name + "_plain")
    lance.write_dataset(_rows(range(3), "a"), plain)
    with pytest.raises(PySparkException) as e:
        spark.readStream.option("readChangeFeed", "true").table(table_name + "_plain")
    assert "needs stable row ids" in str(e.value)
