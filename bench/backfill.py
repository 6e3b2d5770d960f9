"""Backfill benchmark: add a column to a wide table and fill it with an expression of `id`.

A table of ROWS rows (id BIGINT, a 128-dim FLOAT vector, a 64-byte string) gets a column
`c = id * 3 + 1` four ways, each on a fresh copy, in one Spark process:
  column-only   CALL lance.system.add_columns: per fragment one file holding only `c`
  UPDATE, auto  ALTER TABLE ADD COLUMN + UPDATE SET c = ...: sparklance sees that every row of
                every fragment changes and only `c` is assigned, and rewrites `c` in place
  whole rows    the same with rewrite_mode = rows: every row rewritten (merge-on-read)
  Delta         ALTER TABLE ADD COLUMN + UPDATE on a Delta table (deletion vectors) of the same data
Then an UPDATE of 1% of the rows (spread over all fragments) of an existing column, auto against
rows: auto must choose whole rows there and cost no more.
Printed: seconds (median of --runs after a warm-up, each on a fresh copy), bytes written (growth
of the table directory), and the ratio of bytes written to the new column's own encoded size (the
size of a one-column Lance table holding just `c`; goal <= 1.2 for column-only), and time
ratios (goal: column-only faster than Delta).

Run: bench/setup && .venv-bench/bin/python bench/backfill.py [--rows 5000000]"""
import argparse
import os
import shutil
from pathlib import Path

from common import print_table, restore, scratch_dir, spark_session, timed


def tree_bytes(root):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(root) for n in names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default="sparklance,delta")
    args = ap.parse_args()
    systems = args.systems.split(",")
    root = scratch_dir("sparklance-bench-backfill-")
    warehouse = root / "warehouse"
    spark = spark_session(warehouse, with_delta="delta" in systems)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    print(f"{args.rows} rows, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

    from pyspark.sql.functions import expr
    df = (spark.range(args.rows)
          .withColumn("vec", expr("transform(sequence(1, 128), x -> CAST(rand() AS FLOAT))")
                      .alias("vec", metadata={"lance.vector_dim": 128}))
          .withColumn("s", expr("substring(repeat(sha2(CAST(id AS STRING), 256), 2), 1, 64)"))
          .repartitionByRange(10, "id"))
    df.writeTo("lance.bench.base").tableProperty("max_rows_per_file", str(args.rows // 10)).create()
    base = warehouse / "bench" / "base.lance"
    work = warehouse / "bench" / "work.lance"
    delta_base, delta_work = root / "delta_base", root / "delta_work"
    if "delta" in systems:
        spark.table("lance.bench.base").write.format("delta").option("delta.enableDeletionVectors", "true").save(str(delta_base))
    fill = "id * 3 + 1"

    # The new column's own encoded size: a Lance table of just that column.
    spark.sql(f"CREATE TABLE lance.bench.only_c AS SELECT CAST({fill} AS BIGINT) AS c FROM lance.bench.base")
    column_bytes = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(warehouse / "bench" / "only_c.lance" / "data")
                       for n in names)

    results = {}

    def measure(name, run, prepare, directory, into=results):
        grown = []

        def once():
            before = tree_bytes(directory)
            run()
            grown.append(tree_bytes(directory) - before)
        seconds, _ = timed(once, prepare=prepare, runs=args.runs)
        into[name] = (seconds, grown[-1])

    def with_mode(mode, *statements):
        spark.conf.set("spark.sparklance.rewrite_mode", mode)
        try:
            for statement in statements:
                spark.sql(statement)
        finally:
            spark.conf.unset("spark.sparklance.rewrite_mode")

    measure("column-only (add_columns)",
            lambda: spark.sql(f"CALL lance.system.add_columns(table => 'bench.work', expressions => map('c', '{fill}'))").collect(),
            lambda: restore(base, work), work)
    add_and_update = ["ALTER TABLE lance.bench.work ADD COLUMN c BIGINT", f"UPDATE lance.bench.work SET c = {fill}"]
    measure("UPDATE, auto (ADD COLUMN + UPDATE)", lambda: with_mode("auto", *add_and_update), lambda: restore(base, work), work)
    measure("whole rows (ADD COLUMN + UPDATE, rows)", lambda: with_mode("rows", *add_and_update),
            lambda: restore(base, work), work)
    if "delta" in systems:
        measure("Delta (ADD COLUMN + UPDATE)",
                lambda: (spark.sql(f"ALTER TABLE delta.`{delta_work}` ADD COLUMN c BIGINT"),
                         spark.sql(f"UPDATE delta.`{delta_work}` SET c = {fill}")),
                lambda: restore(delta_base, delta_work), delta_work)

    ours = results["column-only (add_columns)"][0]
    print_table(f"backfill of c = {fill} (median seconds; bytes written; new column alone: {column_bytes / 2**20:.1f} MiB)",
                ["way", "seconds", "column-only / this", "MiB written", "written / column"],
                [[name, f"{s:.2f}", f"{ours / s:.2f}", f"{b / 2**20:.1f}", f"{b / column_bytes:.2f}"]
                 for name, (s, b) in results.items()])

    # Few rows: 1% spread over every fragment, an existing column; auto must not lose to rows.
    few = {}
    for mode in ["auto", "rows"]:
        measure(mode, lambda m=mode: with_mode(m, "UPDATE lance.bench.work SET s = upper(s) WHERE id % 100 = 7"),
                lambda: restore(base, work), work, into=few)
    print_table("UPDATE of 1% of the rows, spread (median seconds; bytes written)",
                ["rewrite_mode", "seconds", "auto / this", "MiB written"],
                [[m, f"{s:.2f}", f"{few['auto'][0] / s:.2f}", f"{b / 2**20:.1f}"] for m, (s, b) in few.items()])
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
