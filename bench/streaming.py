"""Streaming benchmark: the sink's sustained throughput, a row's latency from sink to change
stream, and what a long stream of small batches leaves in the table.

1. Sink throughput. The same input, a directory of Parquet files of BATCH rows each (id BIGINT,
   a INT, b DOUBLE, c STRING), is streamed one file per micro-batch (Trigger.AvailableNow) into
     sparklance  writeStream.toTable("lance.bench.<t>")
     delta       writeStream.format("delta").start(<path>)
   in turns in one Spark process, for 1,000-row and 100,000-row batches: rows per second of the
   whole query, and the ratio (goal: sparklance ahead of Delta, ratio > 1).
2. Latency. A rate source writes into a table with Trigger.ProcessingTime('1 second'); a change
   stream (readChangeFeed, same trigger) reads it; each batch the reader sees records now minus
   the rows' generation time. Median and p90 over the run, for sparklance and for Delta's CDF.
3. Small batches. BATCHES batches of 100 rows into a table with auto compaction off
   (auto_compact = false) and into one with the defaults (the sink compacts a stream's appends
   unless the table turns it off): the fragment count after the run and a full scan's time
   (median of 5).

Run: bench/setup && .venv-bench/bin/python bench/streaming.py [--small-batches 1000] [--parts 1,2,3]"""
import argparse
import statistics
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from common import print_table, scratch_dir, spark_session, timed

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.float64()), ("c", pa.string())])


def write_input(directory: Path, batches: int, rows: int) -> Path:
    directory.mkdir(parents=True)
    for n in range(batches):
        ids = range(n * rows, (n + 1) * rows)
        table = pa.table({"id": list(ids), "a": [i % 1000 for i in ids], "b": [i * 0.5 for i in ids],
                          "c": [f"name-{i % 100000}" for i in ids]}, schema=SCHEMA)
        pq.write_table(table, directory / f"part-{n:05}.parquet")
    return directory


def file_stream(spark, source: Path):
    return spark.readStream.schema("id BIGINT, a INT, b DOUBLE, c STRING").option("maxFilesPerTrigger", 1) \
        .parquet(str(source))


def warm_up(spark, root: Path, systems):
    """A few small batches into each system's sink, untimed: the first stream of the process paid
    for class loading and the JIT (20 batches of 100 rows took 32 s as the first stream, 20 s next)."""
    source = write_input(root / "input-warm-up", 5, 100)
    for system in systems:
        writer = file_stream(spark, source).writeStream.option("checkpointLocation", str(root / f"ckpt-warm-up-{system}")) \
            .trigger(availableNow=True)
        query = writer.format("lance").toTable("lance.bench.warm_up") if system == "sparklance" \
            else writer.format("delta").start(str(root / "delta-warm-up"))
        query.awaitTermination()


def throughput(spark, root: Path, batch_rows: int, batches: int, systems):
    source = write_input(root / f"input-{batch_rows}", batches, batch_rows)
    seconds = {}
    for system in systems:
        checkpoint = root / f"ckpt-{system}-{batch_rows}"
        writer = file_stream(spark, source).writeStream.option("checkpointLocation", str(checkpoint)) \
            .trigger(availableNow=True)
        start = time.perf_counter()
        if system == "sparklance":
            # toTable creates the table with the writer's format, Spark's default (parquet) unless named
            query = writer.format("lance").toTable(f"lance.bench.sink_{batch_rows}")
        else:
            query = writer.format("delta").start(str(root / f"delta-sink-{batch_rows}"))
        query.awaitTermination()
        seconds[system] = time.perf_counter() - start
    return {s: batches * batch_rows / t for s, t in seconds.items()}


def latency(spark, root: Path, system: str, seconds: int):
    """Seconds from a row's generation to its arrival at a change stream reader, one sample per
    reader batch (the oldest row of the batch)."""
    samples = []
    if system == "sparklance":
        spark.sql("CREATE TABLE lance.bench.latency (value BIGINT, timestamp TIMESTAMP) "
                  "TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
        sink = lambda w: w.toTable("lance.bench.latency")
        source = spark.readStream.option("readChangeFeed", "true").table("lance.bench.latency")
    else:
        path = str(root / "delta-latency")
        spark.range(0).selectExpr("id AS value", "current_timestamp() AS timestamp").write.format("delta") \
            .option("delta.enableChangeDataFeed", "true").save(path)
        sink = lambda w: w.format("delta").start(path)
        source = spark.readStream.format("delta").option("readChangeFeed", "true").load(path)

    def record(batch, _):
        oldest = batch.selectExpr("min(timestamp)").head()[0]
        if oldest is not None:
            samples.append(time.time() - oldest.timestamp())

    # In the table's column order, which sinks that match columns by position need too.
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1000).load().select("value", "timestamp")
    writer = sink(rate.writeStream
                  .option("checkpointLocation", str(root / f"lat-w-{system}")).trigger(processingTime="1 second"))
    reader = source.writeStream.foreachBatch(record).option("checkpointLocation", str(root / f"lat-r-{system}")) \
        .trigger(processingTime="1 second").start()
    time.sleep(seconds)
    writer.stop()
    reader.stop()
    samples = samples[2:] or samples  # the first batches include the queries' start-up
    if not samples:
        return None  # the reader got no row within the run; a longer --latency-seconds gives it time
    return statistics.median(samples), sorted(samples)[int(0.9 * (len(samples) - 1))], len(samples)


def small_batches(spark, root: Path, batches: int):
    source = write_input(root / "input-small", batches, 100)
    results = []
    for name, props in (("auto_compact=false", "TBLPROPERTIES ('auto_compact' = 'false')"),
                        ("defaults (auto compaction)", "")):
        table = f"lance.bench.small_{'no_compaction' if props else 'defaults'}"
        spark.sql(f"CREATE TABLE {table} (id BIGINT, a INT, b DOUBLE, c STRING) {props}")
        start = time.perf_counter()
        file_stream(spark, source).writeStream.option("checkpointLocation", str(root / f"ckpt-{table}")) \
            .trigger(availableNow=True).toTable(table).awaitTermination()
        elapsed = time.perf_counter() - start
        fragments = spark.sql(f"SELECT count(DISTINCT _fragid) FROM {table}").head()[0]
        versions = spark.sql(f"SELECT count(*) FROM {table}.history").head()[0]
        scan = timed(lambda: spark.table(table).write.format("noop").mode("overwrite").save(), runs=5)[0]
        results.append([name, str(batches), f"{elapsed:.1f}", str(fragments), str(versions), f"{scan:.3f}"])
        print(results[-1], flush=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", default="sparklance,delta")
    ap.add_argument("--parts", default="1,2,3")
    ap.add_argument("--small-batches", type=int, default=1000)
    ap.add_argument("--latency-seconds", type=int, default=30)
    args = ap.parse_args()
    systems = args.systems.split(",")
    parts = set(args.parts.split(","))
    root = scratch_dir("sparklance-bench-")
    spark = spark_session(root / "warehouse", with_delta="delta" in systems)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    warm_up(spark, root, systems)
    if "1" in parts:
        rows = []
        for batch_rows, batches in ((1_000, 200), (100_000, 20)):
            rate = throughput(spark, root, batch_rows, batches, systems)
            print(batch_rows, {s: round(r) for s, r in rate.items()}, flush=True)
            rows.append([f"{batch_rows:,}", str(batches)] + [f"{rate[s]:,.0f}" for s in systems] +
                        ([f"{rate['sparklance'] / rate['delta']:.2f}"] if "delta" in rate else []))
        print_table("Sink throughput, rows/s (one file per batch, AvailableNow)",
                    ["batch rows", "batches"] + [f"{s} rows/s" for s in systems] +
                    (["sparklance/delta"] if "delta" in systems else []), rows)
    if "2" in parts:
        rows = []
        for system in systems:
            measured = latency(spark, root, system, args.latency_seconds)
            if measured is None:
                rows.append([system, f"no batch in {args.latency_seconds} s", "", "0"])
            else:
                median, p90, n = measured
                rows.append([system, f"{median:.2f}", f"{p90:.2f}", str(n)])
            print(rows[-1], flush=True)
        print_table("Latency from rate source to change-stream reader, ProcessingTime 1 s both",
                    ["system", "median s", "p90 s", "batches"], rows)
    if "3" in parts:
        print_table(f"{args.small_batches} batches of 100 rows",
                    ["table", "batches", "stream s", "fragments", "versions", "full scan s"],
                    small_batches(spark, root, args.small_batches))
    spark.stop()


if __name__ == "__main__":
    main()
