"""The Structured Streaming sink (`writeStream ... toTable("lance.db.t")`) and idempotent writes.

Each micro-batch commits one Lance version whose transaction properties carry the query id and
batch id (read back by pylance with `read_transaction`), a batch replayed after a restart is
skipped, pylance and Spark writers and compaction interleave with the stream, and `txnAppId` /
`txnVersion` (write options, or session settings for MERGE in `foreachBatch`) skip writes the
table already holds. The input is a directory of JSON files, one file per batch under
Trigger.AvailableNow, so every run is bounded."""
import json
import os

import lance
import pyarrow as pa
import pytest

from conftest import table_path

APP = "sparklance.txn.app_id"
TXN = "sparklance.txn.version"
STATEMENT = "sparklance.statement"
SCHEMA = "id BIGINT, k STRING"


class Input:
    """A directory the stream reads; `add(ids)` writes the next file (one batch)."""

    def __init__(self, root):
        self.dir = root / "input"
        self.dir.mkdir(parents=True)
        self.n = 0

    def add(self, ids):
        self.n += 1
        tmp = self.dir.parent / f".part-{self.n}.tmp"
        tmp.write_text("".join(json.dumps({"id": i, "k": f"k{i % 3}"}) + "\n" for i in ids))
        os.rename(tmp, self.dir / f"part-{self.n:04d}.json")


@pytest.fixture
def work(tmp_path):
    return Input(tmp_path), tmp_path / "checkpoint"


def run(spark, source, checkpoint, table, mode="append", aggregate=False, batch=None):
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", "1").json(str(source.dir))
    if aggregate:
        df = df.groupBy("k").count()
    writer = (df.writeStream.outputMode(mode).option("checkpointLocation", str(checkpoint))
              .trigger(availableNow=True))
    query = writer.foreachBatch(batch).start() if batch else writer.format("lance").toTable(table)
    query.awaitTermination()
    return query


def stream_commits(path):
    """(table version, app id, batch id, statement) of each version a stream committed, as pylance reads them."""
    ds = lance.dataset(path)
    out = []
    for v in ds.versions():
        props = ds.read_transaction(v["version"]).transaction_properties or {}
        if APP in props:
            out.append((v["version"], props[APP], int(props[TXN]), props.get(STATEMENT)))
    return out


def forget(checkpoint, n):
    """Removes batch n from the checkpoint's commit log (and its checksum), as a crash right after the sink's commit leaves it."""
    os.remove(checkpoint / "commits" / str(n))
    crc = checkpoint / "commits" / f".{n}.crc"
    if crc.exists():
        os.remove(crc)


def ids(path):
    return sorted(lance.dataset(path).to_table(columns=["id"]).column("id").to_pylist())


def test_append_replay_and_interleaved_writers(spark, warehouse, table_name, work):
    source, checkpoint = work
    path = table_path(warehouse, table_name)
    for i in range(3):
        source.add(range(i * 10, i * 10 + 10))
    query = run(spark, source, checkpoint, table_name)  # toTable creates the table
    commits = stream_commits(path)
    assert [(app, b, s) for _, app, b, s in commits] == [(query.id, b, "STREAMING APPEND") for b in range(3)]
    assert ids(path) == list(range(30))

    # Batch 2 landed but the checkpoint does not know: the restart re-runs it, the sink skips it.
    versions = len(lance.dataset(path).versions())
    forget(checkpoint, 2)
    run(spark, source, checkpoint, table_name)
    assert len(lance.dataset(path).versions()) == versions and ids(path) == list(range(30))

    # pylance appends, Spark deletes, pylance compacts, between batches.
    lance.write_dataset(pa.table({"id": pa.array([1000, 1001], pa.int64()), "k": ["x", "x"]}), path, mode="append")
    spark.sql(f"DELETE FROM {table_name} WHERE id < 5")
    source.add(range(30, 40))
    run(spark, source, checkpoint, table_name)
    lance.dataset(path).optimize.compact_files()
    source.add(range(40, 45))
    run(spark, source, checkpoint, table_name)
    assert ids(path) == list(range(5, 45)) + [1000, 1001]
    assert [b for _, _, b, _ in stream_commits(path)] == [0, 1, 2, 3, 4]
    lance.dataset(path).validate()


def test_replay_skipped_after_cleanup_removed_the_commit_record(spark, warehouse, table_name, work):
    """The manifest's watermark (table metadata, kept by pylance's later commits) still knows the
    batch after cleanup removed the version and transaction file that recorded it."""
    source, checkpoint = work
    path = table_path(warehouse, table_name)
    source.add(range(0, 10))
    source.add(range(10, 20))
    query = run(spark, source, checkpoint, table_name)
    key = f"sparklance.txn.app.{query.id}"
    lance.write_dataset(pa.table({"id": pa.array([500], pa.int64()), "k": ["p"]}), path, mode="append")
    ds = lance.dataset(path)
    assert ds.metadata[key].split("@")[0] == "1"
    ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))
    assert not stream_commits(path)  # every version the stream wrote is gone
    forget(checkpoint, 1)
    run(spark, source, checkpoint, table_name)
    assert ids(path) == list(range(20)) + [500]


def test_complete_mode_and_update_refused(spark, warehouse, table_name, work):
    source, checkpoint = work
    path = table_path(warehouse, table_name)
    source.add(range(6))
    source.add(range(6, 9))
    run(spark, source, checkpoint, table_name, mode="complete", aggregate=True)
    rows = lance.dataset(path).to_table().to_pylist()
    assert sorted((r["k"], r["count"]) for r in rows) == [("k0", 3), ("k1", 3), ("k2", 3)]
    assert [s for _, _, _, s in stream_commits(path)] == ["STREAMING COMPLETE"] * 2
    versions = len(lance.dataset(path).versions())
    with pytest.raises(Exception, match="does not support Update mode"):
        run(spark, source, checkpoint.parent / "cp2", table_name, mode="update", aggregate=True)
    assert len(lance.dataset(path).versions()) == versions


def test_idempotent_writes_and_merge_in_foreach_batch(spark, warehouse, table_name, work):
    source, checkpoint = work
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} ({SCHEMA})")
    df = spark.range(3).selectExpr("id", "'a' AS k")
    for _ in range(2):
        df.writeTo(table_name).option("txnAppId", "loader").option("txnVersion", "1").append()
    assert ids(path) == [0, 1, 2]
    props = lance.dataset(path).read_transaction(lance.dataset(path).version).transaction_properties
    assert props[APP] == "loader" and props[TXN] == "1" and props["sparklance.txn.kind"] == "write"

    # An upsert stream: each batch is a MERGE made idempotent by the session settings.
    def upsert(batch, batch_id):
        session = batch.sparkSession
        session.conf.set("spark.sparklance.txnAppId", "upserts")
        session.conf.set("spark.sparklance.txnVersion", str(batch_id))
        try:
            batch.createOrReplaceTempView("updates")
            session.sql(f"MERGE INTO {table_name} t USING updates s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET t.k = t.k || '+' WHEN NOT MATCHED THEN INSERT *")
        finally:
            session.conf.unset("spark.sparklance.txnAppId")
            session.conf.unset("spark.sparklance.txnVersion")

    source.add([1, 5])
    source.add([5, 6])
    run(spark, source, checkpoint, table_name, batch=upsert)
    def keys():
        return {r["id"]: r["k"] for r in lance.dataset(path).to_table().to_pylist()}
    assert keys() == {0: "a", 1: "a+", 2: "a", 5: "k2+", 6: "k0"}
    # Batch 1 replayed (its MERGE committed, the checkpoint did not record it): skipped.
    forget(checkpoint, 1)
    run(spark, source, checkpoint, table_name, batch=upsert)
    assert keys() == {0: "a", 1: "a+", 2: "a", 5: "k2+", 6: "k0"}
    lance.dataset(path).validate()
