"""Large values benchmark: 3 GiB of 1 MiB images (ROWS rows of id and a random 1 MiB binary).

The same rows as a Lance table written by pylance (plain large_binary, and a blob column), and as
Parquet written by Spark; in one Spark process (local[2], the driver given --memory):
  scan    sum(length(img)) over every row
  ids     sum(id): a projection that does not read the images
  copy    CTAS into a new table of the same kind (Parquet: DataFrame write)
and pylance's own scan of the same table (to_batches, summing lengths). Printed: median seconds of
--runs after a warm-up, the ratio to Parquet, and per operation the peak heap of the Spark JVM (every
heap pool's peak added: an upper bound; with a large heap the collector leaves garbage around, so
this overstates what is live) and its old generation, and the Python process's peak resident set
for pylance. An operation that fails (out of memory) is reported as such. Goals (issue 15): time
within 1.2x of Parquet; peak heap below 1 GiB, shown by running with --memory 1g (where Spark's
Parquet reader runs out of memory and takes the driver with it: leave it out with --systems).

Run: bench/setup && .venv-bench/bin/python bench/blobs.py [--rows 3072] [--memory 4g]
     [--systems parquet,sparklance,pylance]"""
import argparse
import os
import shutil
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common import PeakMemory, print_table, scratch_dir, spark_session, timed


def write_images(path, rows, blob):
    metadata = {"lance-encoding:blob": "true"} if blob else None
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("img", pa.large_binary(), metadata=metadata)])
    rng = np.random.default_rng(42)

    def batches():
        for start in range(0, rows, 32):
            ids = list(range(start, min(rows, start + 32)))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array([rng.bytes(1 << 20) for _ in ids], pa.large_binary())],
                                  schema=schema)
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path)


def pylance_scan(path):
    ds = lance.dataset(path)
    if "blob" in str(ds.schema.field("img").type):
        total = 0
        for batch in ds.to_batches(columns=["id"], with_row_address=True, batch_size=64):
            total += sum(len(b.read()) for b in ds.take_blobs("img", addresses=batch.column("_rowaddr").to_pylist()))
        return total
    return sum(sum(len(v) for v in b.column(0).to_pylist()) for b in ds.to_batches(columns=["img"], batch_size=32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3072)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memory", default="4g")
    ap.add_argument("--systems", default="parquet,sparklance,pylance")
    args = ap.parse_args()
    systems = set(args.systems.split(","))
    root = scratch_dir("sparklance-bench-blobs-")
    warehouse = root / "warehouse"
    (warehouse / "bench").mkdir(parents=True)
    for name, blob in [("images", False), ("blobs", True)]:
        write_images(str(warehouse / "bench" / f"{name}.lance"), args.rows, blob)
    spark = spark_session(warehouse, memory=args.memory)
    memory = PeakMemory(spark.sparkContext._jvm)
    parquet, parquet_copy = root / "images.parquet", root / "copy.parquet"
    # The Parquet input is written by pyarrow (its writer needs no Spark heap); Spark's Parquet
    # writer is measured by the copy.
    parquet.mkdir()
    with pq.ParquetWriter(str(parquet / "part-0.parquet"), pa.schema([("id", pa.int64()), ("img", pa.large_binary())])) as w:
        for batch in lance.dataset(str(warehouse / "bench" / "images.lance")).to_batches(batch_size=128):
            w.write_batch(batch)
    spark.read.parquet(str(parquet)).createOrReplaceTempView("pq")
    total = args.rows * (1 << 20)
    print(f"{args.rows} rows of 1 MiB ({total / 2**30:.1f} GiB), driver memory {args.memory}, "
          f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

    def measure(run, prepare=None):
        memory.reset()
        try:
            seconds, _ = timed(run, prepare=prepare, runs=args.runs)
        except Exception as e:  # e.g. java.lang.OutOfMemoryError in a task
            print(f"failed: {str(e).splitlines()[0][:200]}")
            return None, memory.read()
        return seconds, memory.read()

    def drop(table):
        return lambda: spark.sql(f"DROP TABLE IF EXISTS {table}")

    def clear(path):
        return lambda: shutil.rmtree(path, ignore_errors=True)

    results = {}
    for op, query in [("scan", "SELECT sum(length(img)) FROM {t}"), ("ids", "SELECT sum(id) FROM {t}")]:
        for system, table in [("Parquet", "pq"), ("sparklance", "lance.bench.images"), ("sparklance blob", "lance.bench.blobs")]:
            if system.split()[0].lower() not in systems:
                continue
            q = query.format(t=table)

            def run(q=q, op=op):
                got = spark.sql(q).first()[0]
                assert op != "scan" or got == total, (q, got)
            results[(op, system)] = measure(run)
    if "parquet" in systems:
        results[("copy", "Parquet")] = measure(lambda: spark.read.parquet(str(parquet)).write.parquet(str(parquet_copy)),
                                               prepare=clear(parquet_copy))
    for system, table in [("sparklance", "images"), ("sparklance blob", "blobs")]:
        if "sparklance" not in systems:
            continue
        results[("copy", system)] = measure(
            lambda: spark.sql(f"CREATE TABLE lance.bench.{table}_copy AS SELECT * FROM lance.bench.{table}"),
            prepare=drop(f"lance.bench.{table}_copy"))
    for system, name in [("pylance", "images"), ("pylance blob", "blobs")]:
        if "pylance" not in systems:
            continue
        path = str(warehouse / "bench" / f"{name}.lance")
        assert pylance_scan(path) == total
        results[("scan", system)] = measure(lambda: pylance_scan(path))

    rows = []
    for (op, system), (seconds, peak) in results.items():
        base = results.get((op, "Parquet"), (None,))[0]
        rows.append([op, system, "failed" if seconds is None else f"{seconds:.2f}",
                     f"{seconds / base:.2f}" if seconds and base else "-", peak["jvm heap"], peak["jvm old gen"],
                     peak["python rss"] if system.startswith("pylance") else "-"])
    print_table("1 MiB values (median seconds; ratio to Parquet; peaks in MiB)",
                ["op", "system", "seconds", "/ Parquet", "jvm heap peak", "jvm old gen peak", "python rss peak"], rows)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
