"""Append benchmark: the time of one append of ROWS rows (the columns of bench/skipping.py: k BIGINT,
day DATE, v DOUBLE, s STRING, payload STRING) into a new sparklance table, 1 warm-up + RUNS timed
runs (each into a table of its own), median, for three tables: the default (zone maps on the first
32 columns, here all five, gathered by the write tasks), `zonemap_columns` = '*' and = '' (none), to
show what gathering zones costs. The kinds take turns run by run, so a busy machine slows them alike;
the ratio to `none` is printed.
`--jar` runs another sparklance jar (e.g. an older build, to compare before and after a change).

Run: .venv/bin/python bench/append.py [--rows 10000000] [--runs 3] [--jar path/to/sparklance.jar]"""
import argparse
import itertools
import statistics
import time

import sparklance
from common import print_table, scratch_dir, spark_session


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    ap.add_argument("--only", choices=["default", "all", "none"], help="measure one of the tables only")
    args = ap.parse_args()
    if args.jar:
        sparklance.jar_path = lambda: args.jar
    root = scratch_dir("sparklance-bench-append-")
    spark = spark_session(root / "warehouse")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(args.rows).selectExpr(
        "id AS k", "date_add(DATE'2020-01-01', CAST(id DIV 100000 AS INT)) AS day", "id * 0.5 AS v",
        "concat('s', CAST(id % 1000 AS STRING)) AS s", "sha2(CAST(id AS STRING), 256) AS payload")
    counter = itertools.count()
    kinds = {"default": "", "all": "TBLPROPERTIES ('zonemap_columns' = '*')",
             "none": "TBLPROPERTIES ('zonemap_columns' = '')"}
    if args.only:
        kinds = {args.only: kinds[args.only]}
    samples = {kind: [] for kind in kinds}
    for run in range(1 + args.runs):
        for kind, props in kinds.items():
            name = f"lance.bench.t{next(counter)}"
            spark.sql(f"CREATE TABLE {name} (k BIGINT, day DATE, v DOUBLE, s STRING, payload STRING) {props}")
            start = time.perf_counter()
            df.writeTo(name).append()
            elapsed = time.perf_counter() - start
            spark.sql(f"DROP TABLE {name} PURGE")
            if run:  # the first round warms up
                samples[kind].append(elapsed)
                print(kind, round(elapsed, 3), flush=True)
    medians = {kind: statistics.median(xs) for kind, xs in samples.items()}
    rows = [[k, f"{m:.3f}", f"{m / medians['none']:.3f}" if "none" in medians else "-", " ".join(f"{x:.2f}" for x in samples[k])]
            for k, m in medians.items()]
    print_table(f"Append of {args.rows:,} rows (median of {args.runs}, kinds interleaved)",
                ["zone maps", "seconds", "vs none", "runs"], rows)
    spark.stop()


if __name__ == "__main__":
    main()
