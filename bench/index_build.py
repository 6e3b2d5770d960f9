"""Scalar index build benchmark: sparklance's CREATE INDEX ... USING btree|bitmap against pylance's
create_scalar_index on the same table.

The table: ROWS rows in FRAGMENTS fragments, k BIGINT (random, nearly all distinct) and s STRING
(100 distinct values). Each round builds, for each kind, sparklance's index then pylance's (the
systems take turns, each index dropped untimed before its build); 1 warm-up + RUNS timed rounds,
median, and the ratio sparklance / pylance.

Run: .venv/bin/python bench/index_build.py [--rows 1000000] [--runs 3]"""
import argparse
import statistics
import time

import lance

from common import print_table, scratch_dir, spark_session


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--fragments", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    warehouse = scratch_dir("sparklance-index-bench-")
    spark = spark_session(warehouse)
    table = "lance.db.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql(f"CREATE TABLE {table} (k BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = "
              f"'{-(-args.rows // args.fragments)}', 'zonemap_columns' = '', 'optimize_write' = 'false')")
    (spark.range(args.rows).selectExpr("CAST(rand(7) * 9.2e18 AS BIGINT) AS k",
                                       "concat('value-', CAST(id % 100 AS STRING)) AS s")
     .repartition(args.fragments).writeTo(table).append())
    path = str(warehouse / "db" / "t.lance")
    print(f"{args.rows} rows in {len(lance.dataset(path).get_fragments())} fragments")

    def drop(name):
        if any(i.name == name for i in lance.dataset(path).describe_indices()):
            spark.sql(f"DROP INDEX {name} ON {table}")

    def sparklance_build(kind, column, shuffle=False):
        drop(f"{column}_ix")
        if shuffle:
            spark.conf.set("spark.sparklance.index.btree_driver_merge_rows", "0")
        start = time.perf_counter()
        spark.sql(f"CREATE INDEX {column}_ix ON {table} USING {kind} ({column})")
        elapsed = time.perf_counter() - start
        spark.conf.unset("spark.sparklance.index.btree_driver_merge_rows")
        return elapsed

    def pylance_build(kind, column):
        drop(f"{column}_ix")
        ds = lance.dataset(path)
        start = time.perf_counter()
        ds.create_scalar_index(column, kind.upper(), name=f"{column}_ix")
        return time.perf_counter() - start

    cases = [("btree", "k"), ("btree", "k", True), ("bitmap", "s")]
    samples = {(c, s): [] for c in cases for s in ("sparklance", "pylance")}
    labels = {c: f"{c[0]} ({c[1]}){', shuffle' if len(c) > 2 else ''}" for c in cases}
    for i in range(1 + args.runs):
        for case in cases:
            for system, build in (("sparklance", sparklance_build), ("pylance", pylance_build)):
                elapsed = build(*case) if system == "sparklance" else build(*case[:2])
                if i > 0:
                    samples[(case, system)].append(elapsed)
    rows = []
    for case in cases:
        ours = statistics.median(samples[(case, "sparklance")])
        theirs = statistics.median(samples[(case, "pylance")])
        rows.append((labels[case], f"{ours:.3f}", f"{theirs:.3f}", f"{ours / theirs:.2f}x"))
    print_table(f"index build, {args.rows} rows, median of {args.runs}", ("index", "sparklance s", "pylance s", "ratio"), rows)


if __name__ == "__main__":
    main()
