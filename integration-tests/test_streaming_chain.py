"""Streams chained through sparklance tables while other writers change them.

- rate -> sparklance `events` -> append stream -> memory sink: the memory sink ends with exactly
  the rows of `events`.
- sparklance `accounts` -> change stream -> `foreachBatch` MERGE into `mirror` (idempotent through
  `spark.sparklance.txnAppId` / `txnVersion`): `accounts` receives a stream of new rows from its own
  sink and, from another thread at the same time, UPDATE / DELETE / MERGE statements and
  compactions. Once the writers stop and the mirror stream has caught up, `mirror` equals
  `accounts`, read by Spark and by pylance.
"""
import threading
import time

import lance
import pytest

from conftest import table_path

RUN_SECONDS = 12
DML_ROUNDS = 4


def _await_caught_up(query, timeout=180):
    query.processAllAvailable()
    assert query.exception() is None, query.exception()


def _mirror_batch(batch, batch_id):
    # The stream's own session (a clone of the one that started it), so the idempotency settings
    # never reach statements of other threads.
    spark = batch.sparkSession
    # The newest change of each row wins; a pre-image only states what an update replaced.
    batch.createOrReplaceTempView("changes")
    latest = spark.sql("""
        SELECT id, balance, _change_type FROM (
          SELECT *, row_number() OVER (PARTITION BY id ORDER BY _commit_version DESC,
            CASE _change_type WHEN 'delete' THEN 0 ELSE 1 END DESC) AS n
          FROM changes WHERE _change_type != 'update_preimage') WHERE n = 1""")
    latest.createOrReplaceTempView("latest_changes")
    spark.conf.set("spark.sparklance.txnAppId", "mirror-of-accounts")
    spark.conf.set("spark.sparklance.txnVersion", str(batch_id))
    try:
        spark.sql("""
            MERGE INTO lance.chain.mirror m USING latest_changes c ON m.id = c.id
            WHEN MATCHED AND c._change_type = 'delete' THEN DELETE
            WHEN MATCHED THEN UPDATE SET balance = c.balance
            WHEN NOT MATCHED AND c._change_type != 'delete' THEN INSERT (id, balance) VALUES (c.id, c.balance)""")
    finally:
        spark.conf.unset("spark.sparklance.txnAppId")
        spark.conf.unset("spark.sparklance.txnVersion")


def _other_writer(spark, errors):
    """UPDATE / DELETE / MERGE and a compaction per round, racing the stream's appends."""
    try:
        for r in range(DML_ROUNDS):
            spark.sql(f"UPDATE lance.chain.accounts SET balance = balance + {r + 1} WHERE id % 5 = {r % 5}")
            spark.sql(f"DELETE FROM lance.chain.accounts WHERE id % 17 = {r}")
            spark.sql(f"""MERGE INTO lance.chain.accounts t
                USING (SELECT id, id * 3 AS balance FROM range({r * 40}, {r * 40 + 60})) s ON t.id = s.id
                WHEN MATCHED THEN UPDATE SET balance = s.balance
                WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (s.id, s.balance)""")
            spark.sql("CALL lance.system.compact(table => 'chain.accounts')")
    except Exception as e:  # surfaced by the test thread
        errors.append(e)


def test_change_stream_mirror_equals_source(spark, warehouse, tmp_path):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.chain")
    spark.sql("CREATE TABLE lance.chain.accounts (id BIGINT, balance BIGINT) "
              "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'isolation_level' = 'snapshot')")
    spark.sql("INSERT INTO lance.chain.accounts SELECT id, id FROM range(1000)")
    spark.sql("CREATE TABLE lance.chain.mirror (id BIGINT, balance BIGINT)")

    # New accounts stream in from a rate source, ids from 1,000,000 up.
    feeder = (spark.readStream.format("rate").option("rowsPerSecond", 200).load()
              .selectExpr("value + 1000000 AS id", "value AS balance")
              .writeStream.option("checkpointLocation", str(tmp_path / "feeder"))
              .trigger(processingTime="500 milliseconds").toTable("lance.chain.accounts"))
    # Without a starting version the change stream first emits the rows the table holds as inserts.
    mirror = (spark.readStream.option("readChangeFeed", "true").table("lance.chain.accounts")
              .writeStream.foreachBatch(_mirror_batch)
              .option("checkpointLocation", str(tmp_path / "mirror"))
              .trigger(processingTime="1 second").start())
    errors = []
    other = threading.Thread(target=_other_writer, args=(spark, errors))
    try:
        other.start()
        deadline = time.monotonic() + RUN_SECONDS
        while other.is_alive() or time.monotonic() < deadline:
            assert feeder.exception() is None and mirror.exception() is None, feeder.exception() or mirror.exception()
            time.sleep(0.2)
        feeder.stop()
        assert not errors, errors
        _await_caught_up(mirror)
    finally:
        other.join()
        feeder.stop()
        mirror.stop()

    expected = sorted(tuple(r) for r in spark.table("lance.chain.accounts").collect())
    assert any(i >= 1000000 for i, _ in expected), "the feeder stream wrote nothing"
    assert sorted(tuple(r) for r in spark.table("lance.chain.mirror").collect()) == expected
    ds = lance.dataset(table_path(warehouse, "lance.chain.mirror"))
    assert sorted(zip(*ds.to_table(columns=["id", "balance"]).to_pydict().values())) == expected


def test_append_stream_chain_reaches_memory_sink(spark, tmp_path):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.chain")
    spark.sql("CREATE TABLE lance.chain.events (value BIGINT, timestamp TIMESTAMP)")
    writer = (spark.readStream.format("rate").option("rowsPerSecond", 300).load()
              .writeStream.option("checkpointLocation", str(tmp_path / "events-writer"))
              .trigger(processingTime="500 milliseconds").toTable("lance.chain.events"))
    reader = (spark.readStream.table("lance.chain.events").writeStream.format("memory").queryName("events_copy")
              .option("checkpointLocation", str(tmp_path / "events-reader"))
              .trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + RUN_SECONDS / 2
        while time.monotonic() < deadline:
            assert writer.exception() is None and reader.exception() is None
            time.sleep(0.2)
        writer.stop()
        _await_caught_up(reader)
    finally:
        writer.stop()
        reader.stop()
    expected = sorted(r.value for r in spark.table("lance.chain.events").collect())
    assert expected, "the writer stream wrote nothing"
    assert sorted(r.value for r in spark.table("events_copy").collect()) == expected


def test_a_sink_without_checkpoint_location_does_not_start(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.chain")
    spark.sql("CREATE TABLE lance.chain.no_checkpoint (value BIGINT, timestamp TIMESTAMP)")
    before = spark.sql("SELECT max(version) FROM lance.chain.no_checkpoint.history").head()[0]
    with pytest.raises(Exception, match="checkpointLocation"):
        (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
         .writeStream.trigger(availableNow=True).toTable("lance.chain.no_checkpoint").awaitTermination())
    assert spark.sql("SELECT max(version) FROM lance.chain.no_checkpoint.history").head()[0] == before
