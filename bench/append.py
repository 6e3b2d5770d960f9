"""Append benchmark: the time of one append of ROWS rows (the columns of bench/skipping.py: k BIGINT,
day DATE, v DOUBLE, s STRING, payload STRING) into a new sparklance table, 1 warm-up + RUNS timed
runs (each into a table of its own), median; with zone maps on every column (`zonemap_columns` = '*',
gathered by the write tasks) and with none (`''`, the default for now), to show what gathering zones costs.
`--jar` runs another sparklance jar (e.g. an older build, to compare before and after a change).

Run: .venv/bin/python bench/append.py [--rows 10000000] [--runs 3] [--jar path/to/sparklance.jar]"""
import argparse
import itertools

import sparklance
from common import print_table, scratch_dir, spark_session, timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    ap.add_argument("--only", choices=["all", "none"], help="measure one of the two tables only")
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
    results = {}
    kinds = {"all": "TBLPROPERTIES ('zonemap_columns' = '*')", "none": "TBLPROPERTIES ('zonemap_columns' = '')"}
    for kind, props in kinds.items():
        if args.only and kind != args.only:
            continue
        names = []

        def prepare(props=props, names=names):
            name = f"lance.bench.t{next(counter)}"
            spark.sql(f"CREATE TABLE {name} (k BIGINT, day DATE, v DOUBLE, s STRING, payload STRING) {props}")
            names.append(name)

        def append(names=names):
            df.writeTo(names[-1]).append()

        def drop(names=names):
            while len(names) > 1:
                spark.sql(f"DROP TABLE {names.pop(0)} PURGE")

        median, samples = timed(append, prepare=lambda: (drop(), prepare()), runs=args.runs)
        results[kind] = (median, samples)
        print(kind, round(median, 3), [round(x, 3) for x in samples], flush=True)
    print_table(f"Append of {args.rows:,} rows (median of {args.runs})", ["zone maps", "seconds", "runs"],
                [[k, f"{m:.3f}", " ".join(f"{x:.2f}" for x in s)] for k, (m, s) in results.items()])
    spark.stop()


if __name__ == "__main__":
    main()
