"""Maintenance benchmark: what 20 MERGEs do to a table, and what compaction and vacuum undo.

A table of ROWS rows in 10 fragments (id BIGINT, a INT, b DOUBLE, c STRING; stable row ids unless
--no-stable-row-ids) takes ROUNDS rounds of a 1% MERGE spread over all fragments (half updates of
every 200th row, half inserts). Then, in one Spark process:
  scan        a full scan (every column) fresh, after the rounds and after our compaction: median
              of --runs after a warm-up, and the ratio to fresh (goal <= 1.05 after compaction)
  compaction  CALL lance.system.compact with pylance's defaults vs pylance's compact_files on a copy
              of the same table (goal: within 2x) and vs Delta's OPTIMIZE of a Delta table (deletion
              vectors) that took the same MERGEs (goal: faster); each on a fresh copy, median of --runs
  vacuum      files and bytes of the table before and after vacuum(older_than => '0 seconds'),
              next to those of a fresh copy of its live rows
  memory      per operation, the peak old generation of the Spark JVM and the peak resident set of
              the Python process (where pylance runs)

Run: bench/setup && .venv-bench/bin/python bench/maintenance.py [--rows 5000000] [--rounds 20]"""
import argparse
import os
import shutil
from pathlib import Path

import lance

import sparklance
from common import PeakMemory, print_table, restore, scratch_dir, spark_session, timed


def tree_size(root):
    files, size = 0, 0
    for d, _, names in os.walk(root):
        for n in names:
            files += 1
            size += os.path.getsize(os.path.join(d, n))
    return files, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-stable-row-ids", dest="stable", action="store_false")
    ap.add_argument("--systems", default="sparklance,pylance,delta")
    args = ap.parse_args()
    systems = args.systems.split(",")
    rows, one_pct = args.rows, args.rows // 100
    root = scratch_dir("sparklance-bench-maint-")
    warehouse = root / "warehouse"
    spark = spark_session(warehouse, with_delta="delta" in systems)
    memory = PeakMemory(spark.sparkContext._jvm)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    print(f"{rows} rows, {args.rounds} MERGE rounds of 1% spread, stable row ids {args.stable}, "
          f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

    stable = "'enable_stable_row_ids' = 'true', " if args.stable else ""
    spark.sql(f"CREATE TABLE lance.bench.t (id BIGINT NOT NULL, a INT, b DOUBLE, c STRING) "
              f"TBLPROPERTIES ({stable}'max_rows_per_file' = '{rows // 10}', 'optimize_write' = 'false')")
    df = spark.range(rows).selectExpr("id", "CAST(id % 1000 AS INT) AS a", "id * 0.5 AS b",
                                      "concat('name-', CAST(id % 100000 AS STRING)) AS c")
    df.repartitionByRange(10, "id").writeTo("lance.bench.t").append()
    delta_path = root / "delta"
    if "delta" in systems:
        df.repartitionByRange(10, "id").write.format("delta") \
            .option("delta.enableDeletionVectors", "true").save(str(delta_path))
    table_dir = warehouse / "bench" / "t.lance"

    def scan(table="lance.bench.t"):
        spark.table(table).selectExpr("sum(a)", "sum(b)", "max(length(c))", "count(*)").collect()

    fresh_files = tree_size(table_dir)
    # Copies of the table as it is now and after the rounds, scanned at the end next to the
    # compacted table, all with the same warm JVM.
    shutil.copytree(table_dir, warehouse / "bench" / "fresh.lance")

    next_id = rows
    for k in range(args.rounds):
        offset = (k * 37) % 200
        src = (spark.range(one_pct // 2).selectExpr(f"id * 200 + {offset} AS id")
               .union(spark.range(next_id, next_id + one_pct // 2))
               .selectExpr("id", "CAST(-1 AS INT) AS a", "id * -1.0 AS b", f"'round-{k}' AS c"))
        src.createOrReplaceTempView("src")
        merge = "USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        spark.sql(f"MERGE INTO lance.bench.t t {merge}")
        if "delta" in systems:
            spark.sql(f"MERGE INTO delta.`{delta_path}` t {merge}")
        next_id += one_pct // 2
    after_rounds_files = tree_size(table_dir)
    shutil.copytree(table_dir, warehouse / "bench" / "merged.lance")
    fragments_after_rounds = len(lance.dataset(str(table_dir)).get_fragments())

    # Compaction, each system on a fresh copy of the table after the rounds.
    merged = root / "merged.lance"
    shutil.copytree(table_dir, merged)
    results, peaks = {}, {}

    def measured(name, fn, prepare):
        def run():
            memory.reset()
            fn()
            peaks[name] = memory.read()
        results[name], _ = timed(run, prepare=prepare, runs=args.runs)

    measured("sparklance compact", lambda: sparklance.compact(spark, "lance.bench.t"),
             lambda: restore(merged, table_dir))
    if "pylance" in systems:
        pylance_work = root / "pylance.lance"
        measured("pylance compact_files", lambda: lance.dataset(str(pylance_work)).optimize.compact_files(),
                 lambda: restore(merged, pylance_work))
    if "delta" in systems:
        delta_merged, delta_work = root / "delta_merged", root / "delta_work"
        shutil.copytree(delta_path, delta_merged)
        measured("Delta OPTIMIZE", lambda: spark.sql(f"OPTIMIZE delta.`{delta_work}`").collect(),
                 lambda: restore(delta_merged, delta_work))

    # The last run of ours left the compacted table in place.
    fresh_scan, _ = timed(lambda: scan("lance.bench.fresh"), runs=args.runs, warmup=2)
    after_rounds_scan, _ = timed(lambda: scan("lance.bench.merged"), runs=args.runs)
    compacted_scan, _ = timed(scan, runs=args.runs)
    fragments_compacted = len(lance.dataset(str(table_dir)).get_fragments())
    before_vacuum = tree_size(table_dir)
    memory.reset()
    vacuumed = sparklance.vacuum(spark, "lance.bench.t", older_than="0 seconds")
    peaks["sparklance vacuum"] = memory.read()
    after_vacuum = tree_size(table_dir)
    spark.sql("CREATE TABLE lance.bench.copy AS SELECT * FROM lance.bench.t")
    copy_files = tree_size(warehouse / "bench" / "copy.lance")
    copy_scan, _ = timed(lambda: scan("lance.bench.copy"), runs=args.runs)

    print_table("full scan (median seconds, ratio to fresh)", ["state", "seconds", "ratio", "fragments"], [
        ["fresh", f"{fresh_scan:.3f}", "1.00", 10],
        [f"after {args.rounds} MERGEs", f"{after_rounds_scan:.3f}", f"{after_rounds_scan / fresh_scan:.2f}",
         fragments_after_rounds],
        ["after compaction", f"{compacted_scan:.3f}", f"{compacted_scan / fresh_scan:.2f}", fragments_compacted],
        ["fresh copy of live rows (CTAS)", f"{copy_scan:.3f}", f"{copy_scan / fresh_scan:.2f}",
         len(lance.dataset(str(warehouse / 'bench' / 'copy.lance')).get_fragments())],
    ])
    ours = results["sparklance compact"]
    print_table("compaction (median seconds; ratio = sparklance / other; peak MiB)",
                ["system", "seconds", "ratio", "jvm old gen peak", "python rss peak"],
                [[name, f"{s:.2f}", f"{ours / s:.2f}", peaks[name]["jvm old gen"], peaks[name]["python rss"]]
                 for name, s in results.items()])
    print_table("files and bytes", ["state", "files", "MiB", "bytes / fresh copy"], [
        ["fresh", fresh_files[0], f"{fresh_files[1] / 2**20:.1f}", ""],
        [f"after {args.rounds} MERGEs", after_rounds_files[0], f"{after_rounds_files[1] / 2**20:.1f}",
         f"{after_rounds_files[1] / copy_files[1]:.2f}"],
        ["after compaction, before vacuum", before_vacuum[0], f"{before_vacuum[1] / 2**20:.1f}",
         f"{before_vacuum[1] / copy_files[1]:.2f}"],
        ["after vacuum", after_vacuum[0], f"{after_vacuum[1] / 2**20:.1f}", f"{after_vacuum[1] / copy_files[1]:.2f}"],
        ["fresh copy of live rows (CTAS)", copy_files[0], f"{copy_files[1] / 2**20:.1f}", "1.00"],
    ])
    print(f"\nvacuum removed {vacuumed.old_versions} versions, {vacuumed.data_files_removed} data, "
          f"{vacuumed.deletion_files_removed} deletion and {vacuumed.transaction_files_removed} transaction files, "
          f"{vacuumed.bytes_removed / 2**20:.1f} MiB; peak JVM old gen {peaks['sparklance vacuum']['jvm old gen']} MiB")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
