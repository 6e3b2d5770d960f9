"""The append source (`spark.readStream.table(...)`) over tables pylance 14 writes.

pylance appends and insert-only merge_insert stream out, compactions are skipped, a delete stops the
query naming the version and `skipChangeCommits` (which skips it), limits cut a backlog into several
batches under Trigger.AvailableNow, a restart goes on from its checkpoint, and a vacuum that removed
the versions a stopped query was to read makes its restart fail naming the oldest version left.
"""
import datetime

import lance
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

from conftest import table_path


def _rows(start, stop):
    ids = list(range(start, stop))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]})


def _run(spark, source, checkpoint, options=None, once=False):
    """Runs the stream of `source` (a table name, or a function returning a streaming DataFrame) until
    it has read what is there; returns the ids of each batch, in batch order, and the rows per
    batch its progress reports."""
    got = []
    if callable(source):
        df = source()
    else:
        df = spark.readStream.options(**(options or {})).table(source)
    writer = df.writeStream.option("checkpointLocation", str(checkpoint)).foreachBatch(
        lambda batch, batch_id: got.append((batch_id, sorted(r.id for r in batch.select("id").collect()))))
    query = (writer.trigger(once=True) if once else writer.trigger(availableNow=True)).start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return [ids for _, ids in sorted(got)], [p["numInputRows"] for p in query.recentProgress]


def _all(batches):
    return sorted(i for b in batches for i in b)


def test_pylance_appends_merges_compactions_and_restarts(spark, warehouse, table_name, tmp_path):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_rows(0, 10), path)                     # v1: the initial snapshot
    lance.write_dataset(_rows(10, 20), path, mode="append")     # v2
    lance.write_dataset(_rows(20, 30), path, mode="append")     # v3
    ckpt = tmp_path / "ckpt"
    # One fragment per batch: three batches under AvailableNow.
    batches, progress = _run(spark, table_name, ckpt, {"maxFilesPerTrigger": "1"})
    assert _all(batches) == list(range(30))
    assert len(batches) == 3 and [n for n in progress if n] == [10, 10, 10]

    ds = lance.dataset(path)
    ds.optimize.compact_files()                                 # ReserveFragments + Rewrite: no rows
    ds = lance.dataset(path)
    ds.merge_insert("id").when_not_matched_insert_all().execute(_rows(25, 35))  # an Update adding rows 30..34
    lance.write_dataset(_rows(35, 40), path, mode="append")
    batches, _ = _run(spark, table_name, ckpt)
    assert _all(batches) == list(range(30, 40))
    # Nothing new: nothing read again.
    assert _run(spark, table_name, ckpt)[0] == []

    lance.dataset(path).delete("id < 0")                        # a Delete of nothing: skipped
    batches, _ = _run(spark, table_name, ckpt)
    assert _all(batches) == []
    lance.dataset(path).delete("id < 5")
    deleted = lance.dataset(path).version
    lance.write_dataset(_rows(40, 45), path, mode="append")
    with pytest.raises(StreamingQueryException) as e:
        _run(spark, table_name, ckpt)
    message = str(e.value)
    assert f"Version {deleted} of {table_name} deleted rows" in message and "skipChangeCommits" in message
    assert "LANCE_STREAM_CHANGE_COMMIT" in message
    batches, _ = _run(spark, table_name, ckpt, {"skipChangeCommits": "true"})
    assert _all(batches) == list(range(40, 45))


def test_starting_version_by_path_and_trigger_once(spark, warehouse, table_name, tmp_path):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_rows(0, 5), path)
    lance.write_dataset(_rows(5, 10), path, mode="append")      # v2
    lance.write_dataset(_rows(10, 15), path, mode="append")     # v3
    by_path = lambda: spark.readStream.format("lance").option("startingVersion", "2").option("maxFilesPerTrigger", "1").load(path)
    # Trigger.Once reads all that is there in one batch, whatever the limits.
    batches, _ = _run(spark, by_path, tmp_path / "once", once=True)
    assert batches == [list(range(5, 15))]
    # Spark runs a first batch even when it is empty.
    batches, _ = _run(spark, table_name, tmp_path / "latest", {"startingVersion": "latest"})
    assert _all(batches) == []
    lance.write_dataset(_rows(15, 20), path, mode="append")
    batches, _ = _run(spark, table_name, tmp_path / "latest", {"startingVersion": "latest"})
    assert _all(batches) == list(range(15, 20))


def test_vacuumed_versions_fail_the_restart(spark, warehouse, table_name, tmp_path):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_rows(0, 5), path)
    ckpt = tmp_path / "ckpt"
    assert _all(_run(spark, table_name, ckpt)[0]) == list(range(5))
    lance.write_dataset(_rows(5, 10), path, mode="append")      # v2: never read
    lance.write_dataset(_rows(10, 15), path, mode="append")     # v3
    stats = lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert stats.old_versions == 2
    oldest = lance.dataset(path).version
    with pytest.raises(StreamingQueryException) as e:
        _run(spark, table_name, ckpt)
    message = str(e.value)
    assert "LANCE_VERSION_REMOVED" in message and "no longer has version 2" in message
    assert f"oldest version left is {oldest}" in message and f"startingVersion {oldest} or later" in message
    # As the error says: a new checkpoint from the oldest version left.
    assert _all(_run(spark, table_name, tmp_path / "new", {"startingVersion": str(oldest)})[0]) == list(range(10, 15))
