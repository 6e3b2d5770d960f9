"""DML benchmark: sparklance vs Delta Lake (deletion vectors) vs pylance on the same data.

A table of ROWS rows in 10 fragments / files: id BIGINT, a INT, b DOUBLE, c STRING. Operations,
each with keys clustered (one contiguous id range) and spread (every k-th id, all fragments):
  merge   upsert 1% of ROWS: half matched, half new
  update  1% of rows by key predicate (b = b + 1)
  delete  0.1% of rows by a key list (id IN (...))
  delete1 1% of rows by key predicate, as the update (the issue's goal is stated for 1%)
Each operation runs on a fresh copy of the base table: 1 warm-up and 5 timed runs, median printed
with the ratios sparklance/Delta and sparklance/pylance.

`--no-zonemaps` writes sparklance's table without zone maps, as pylance writes tables.
`--source` is how the Spark systems get MERGE's source, cached in memory either way (pylance takes
the Arrow table): `local` (the default) builds it from the local rows, as an application upserting
from pandas does, and Spark then carries its rows in the plan, walking them in every analysis;
`parquet` reads it from a Parquet file, as a staging table would be read.
`--jar` runs another sparklance jar (e.g. an older build, to compare before and after a change).

Run: bench/setup && .venv-bench/bin/python bench/dml.py [--rows 10000000] [--no-zonemaps] [--source local|parquet]
     [--jar path/to/sparklance.jar]"""
import argparse
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import sparklance

from common import print_table, restore, scratch_dir, spark_session, timed


def base_arrow(rows):
    ids = np.arange(rows, dtype=np.int64)
    return pa.table({"id": ids, "a": (ids % 1000).astype(np.int32), "b": ids * 0.5,
                     "c": pa.array(np.char.add("name-", (ids % 100000).astype(str)))})


def key_sets(rows):
    one_pct, tenth_pct = rows // 100, rows // 1000
    start = rows // 2 + 12345  # inside one fragment
    return {
        "clustered": {"update": f"id >= {start} AND id < {start + one_pct}",
                      "delete1": f"id >= {start} AND id < {start + one_pct}",
                      "merge_matched": np.arange(start, start + one_pct // 2),
                      "delete": np.arange(start, start + tenth_pct)},
        "spread": {"update": "id % 100 = 7",
                   "delete1": "id % 100 = 11",
                   "merge_matched": np.arange(0, rows, 200)[: one_pct // 2] + 3,
                   "delete": np.arange(0, rows, 1000)[:tenth_pct] + 11},
    }


def merge_source(rows, matched):
    new = np.arange(rows, rows + len(matched), dtype=np.int64)
    ids = np.concatenate([matched.astype(np.int64), new])
    return pa.table({"id": ids, "a": np.full(len(ids), -1, np.int32), "b": ids * -1.0,
                     "c": pa.array(["merged"] * len(ids))})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--systems", default="sparklance,delta,pylance")
    ap.add_argument("--ops", default="merge,update,delete,delete1",
                    help="operations to run, a subset of the default")
    ap.add_argument("--layouts", default="clustered,spread", help="key layouts to run")
    ap.add_argument("--no-zonemaps", action="store_true",
                    help="sparklance's table without zone maps, as pylance writes tables")
    ap.add_argument("--source", choices=["local", "parquet"], default="local",
                    help="MERGE's source for Spark: built from local rows, or read from a Parquet file")
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    args = ap.parse_args()
    if args.jar:
        sparklance.jar_path = lambda: args.jar
    systems = args.systems.split(",")
    rows = args.rows
    root = scratch_dir("sparklance-bench-")
    warehouse = root / "warehouse"
    spark = spark_session(warehouse, with_delta="delta" in systems)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    data = base_arrow(rows)
    per_file = rows // 10

    # Base tables, written once.
    lance_base = warehouse / "bench" / "base.lance"
    # Without the optimized write's rebalancing, the range partitions stay whole: each fragment
    # holds one id range, so "clustered" keys sit in one fragment, as they do in Delta's files.
    zonemaps = ", 'zonemap_columns' = ''" if args.no_zonemaps else ""
    spark.sql(f"CREATE TABLE lance.bench.base (id BIGINT NOT NULL, a INT, b DOUBLE, c STRING) "
              f"TBLPROPERTIES ('max_rows_per_file' = '{per_file}', 'optimize_write' = 'false'{zonemaps})")
    df = spark.range(rows).selectExpr("id", "CAST(id % 1000 AS INT) AS a", "id * 0.5 AS b",
                                      "concat('name-', CAST(id % 100000 AS STRING)) AS c")
    df.repartitionByRange(10, "id").writeTo("lance.bench.base").append()
    delta_base, pylance_base = root / "delta_base", root / "pylance_base.lance"
    if "delta" in systems:
        df.repartitionByRange(10, "id").write.format("delta") \
            .option("delta.enableDeletionVectors", "true").save(str(delta_base))
        spark.sql(f"ALTER TABLE delta.`{delta_base}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    if "pylance" in systems:
        lance.write_dataset(data, str(pylance_base), max_rows_per_file=per_file)

    lance_work = warehouse / "bench" / "work.lance"
    delta_work, pylance_work = root / "delta_work", root / "pylance_work.lance"
    results = []
    for layout, keys in key_sets(rows).items():
        if layout not in args.layouts.split(","):
            continue
        src = merge_source(rows, keys["merge_matched"])
        if args.source == "parquet":
            source_file = root / f"source_{layout}.parquet"
            pq.write_table(src, str(source_file))
            spark.read.parquet(str(source_file)).createOrReplaceTempView("src")
        else:
            spark.createDataFrame(src.to_pandas()).createOrReplaceTempView("src")
        spark.table("src").cache().count()
        delete_list = ", ".join(map(str, keys["delete"]))
        ops = {
            "merge": {
                "sparklance": lambda: spark.sql("MERGE INTO lance.bench.work t USING src s ON t.id = s.id "
                                                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
                "delta": lambda: spark.sql(f"MERGE INTO delta.`{delta_work}` t USING src s ON t.id = s.id "
                                           "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
                "pylance": lambda: lance.dataset(str(pylance_work)).merge_insert("id")
                .when_matched_update_all().when_not_matched_insert_all().execute(src),
            },
            "update": {
                "sparklance": lambda: spark.sql(f"UPDATE lance.bench.work SET b = b + 1 WHERE {keys['update']}"),
                "delta": lambda: spark.sql(f"UPDATE delta.`{delta_work}` SET b = b + 1 WHERE {keys['update']}"),
                "pylance": lambda: lance.dataset(str(pylance_work)).update({"b": "b + 1"}, where=keys["update"]),
            },
            "delete": {
                "sparklance": lambda: spark.sql(f"DELETE FROM lance.bench.work WHERE id IN ({delete_list})"),
                "delta": lambda: spark.sql(f"DELETE FROM delta.`{delta_work}` WHERE id IN ({delete_list})"),
                "pylance": lambda: lance.dataset(str(pylance_work)).delete(f"id IN ({delete_list})"),
            },
            "delete1": {
                "sparklance": lambda: spark.sql(f"DELETE FROM lance.bench.work WHERE {keys['delete1']}"),
                "delta": lambda: spark.sql(f"DELETE FROM delta.`{delta_work}` WHERE {keys['delete1']}"),
                "pylance": lambda: lance.dataset(str(pylance_work)).delete(keys["delete1"]),
            },
        }
        ops = {op: impls for op, impls in ops.items() if op in args.ops.split(",")}
        prepare = {"sparklance": lambda: restore(lance_base, lance_work),
                   "delta": lambda: restore(delta_base, delta_work),
                   "pylance": lambda: restore(pylance_base, pylance_work)}
        for op, impls in ops.items():
            medians = {}
            for system in systems:
                medians[system], _ = timed(impls[system], prepare[system], runs=args.runs)
            results.append((op, layout, medians))
            print(op, layout, {k: round(v, 3) for k, v in medians.items()}, flush=True)
        spark.catalog.uncacheTable("src")

    header = ["operation", "keys"] + [f"{s} s" for s in systems] + \
        [f"sparklance/{s}" for s in systems if s != "sparklance"]
    table = [[op, layout] + [f"{m[s]:.3f}" for s in systems] +
             [f"{m['sparklance'] / m[s]:.2f}" for s in systems if s != "sparklance"]
             for op, layout, m in results]
    print_table(f"DML on {rows:,} rows in 10 fragments (median of {args.runs} runs, MERGE source: {args.source})",
                header, table)
    spark.stop()


if __name__ == "__main__":
    main()
