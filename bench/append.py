"""Append benchmark: the time of one append of ROWS rows (the columns of bench/skipping.py: k BIGINT,
day DATE, v DOUBLE, s STRING, payload STRING) into a new sparklance table, 1 warm-up + RUNS timed
runs (each into a table of its own), median, for three tables: the default (zone maps on the first
32 columns, here all five, gathered by the write tasks), `zonemap_columns` = '*' and = '' (none), to
show what gathering zones costs, `optimize_write` = false (`noopt`: each input partition writes its
own fragments, no shuffle, tails allowed), to show what the optimized write costs, and two baselines in the same process: Spark writing the same
DataFrame as Parquet (`parquet`), and pylance's `write_dataset` of the same rows as one Arrow table
(`pylance`, collected once before the runs, untimed; same `data_storage_version`, its default
`max_rows_per_file`, which is sparklance's too). The kinds take turns run by run, so a busy machine
slows them alike; the ratios to `none`, `parquet` and `pylance` are printed.
`--jar` runs another sparklance jar (e.g. an older build, to compare before and after a change);
`--storage-version` picks the tables' `data_storage_version` (2.2 by default, e.g. 2.0);
`--vector-dim D` adds `emb`, a vector of D float32s (an embedding: `ARRAY<FLOAT>` declared a vector
of D items, a fixed-size list for pylance, a list in Parquet); `--cached` caches the input rows in
Spark's memory first (for the Parquet and sparklance writes alike), as pylance's input is already in
Arrow memory: the write alone, without computing the rows.

Run: .venv/bin/python bench/append.py [--rows 10000000] [--runs 3] [--storage-version 2.0]
     [--only default parquet pylance] [--jar path/to/sparklance.jar] [--vector-dim 128] [--cached]"""
import argparse
import itertools
import shutil
import statistics
import time

import lance
import numpy as np
import pyarrow as pa
import sparklance
from common import print_table, scratch_dir, spark_session


def aligned(table):
    """`table` in buffers of its own: `toArrow`'s point into the IPC stream Spark sent, not aligned
    to the values' width, which pylance refuses (a panic: memory pointer not aligned)."""
    return pa.table({name: pa.concat_arrays(column.chunks + [pa.array([], type=column.type)])
                     for name, column in zip(table.column_names, table.columns)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    ap.add_argument("--only", nargs="+", choices=["default", "all", "none", "noopt", "parquet", "pylance"],
                    help="measure these kinds only")
    ap.add_argument("--storage-version", default="2.2", help="the tables' data_storage_version")
    ap.add_argument("--vector-dim", type=int, default=0, help="add a vector column of this many float32s")
    ap.add_argument("--cached", action="store_true",
                    help="cache the input rows in Spark's memory first, as pylance's are in Arrow memory")
    args = ap.parse_args()
    if args.jar:
        sparklance.jar_path = lambda: args.jar
    root = scratch_dir("sparklance-bench-append-")
    spark = spark_session(root / "warehouse")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(args.rows).selectExpr(
        "id AS k", "date_add(DATE'2020-01-01', CAST(id DIV 100000 AS INT)) AS day", "id * 0.5 AS v",
        "concat('s', CAST(id % 1000 AS STRING)) AS s", "sha2(CAST(id AS STRING), 256) AS payload")
    columns = "k BIGINT, day DATE, v DOUBLE, s STRING, payload STRING"
    dim = args.vector_dim
    if dim:
        df = df.selectExpr("*", f"array_repeat(CAST(k % 97 AS FLOAT), {dim}) AS emb")
        columns += ", emb ARRAY<FLOAT>"
    vector = f", 'emb.arrow.fixed-size-list.size' = '{dim}'" if dim else ""
    if args.cached:
        df = df.cache()
        df.count()
    counter = itertools.count()
    version = f"'data_storage_version' = '{args.storage_version}'"
    kinds = {"default": f"TBLPROPERTIES ({version}{vector})", "all": f"TBLPROPERTIES ('zonemap_columns' = '*', {version}{vector})",
             "none": f"TBLPROPERTIES ('zonemap_columns' = '', {version}{vector})",
             "noopt": f"TBLPROPERTIES ('optimize_write' = 'false', {version}{vector})", "parquet": None, "pylance": None}
    if args.only:
        kinds = {k: kinds[k] for k in args.only}
    arrow = aligned(df.drop("emb").toArrow()) if "pylance" in kinds else None
    if arrow is not None and dim:
        # The same vectors built here: collected, they would exceed what a task may send the driver.
        items = np.repeat((arrow.column("k").to_numpy() % 97).astype(np.float32), dim)
        arrow = arrow.append_column("emb", pa.FixedSizeListArray.from_arrays(pa.array(items), dim))

    def append(kind, props):
        n = next(counter)
        if kind == "parquet":
            start = time.perf_counter()
            df.write.parquet(str(root / f"p{n}"))
            elapsed = time.perf_counter() - start
            shutil.rmtree(root / f"p{n}")
        elif kind == "pylance":
            start = time.perf_counter()
            lance.write_dataset(arrow, str(root / f"l{n}"), data_storage_version=args.storage_version)
            elapsed = time.perf_counter() - start
            shutil.rmtree(root / f"l{n}")
        else:
            name = f"lance.bench.t{n}"
            spark.sql(f"CREATE TABLE {name} ({columns}) {props}")
            start = time.perf_counter()
            df.writeTo(name).append()
            elapsed = time.perf_counter() - start
            spark.sql(f"DROP TABLE {name} PURGE")
        return elapsed

    samples = {kind: [] for kind in kinds}
    for run in range(1 + args.runs):
        for kind, props in kinds.items():
            elapsed = append(kind, props)
            if run:  # the first round warms up
                samples[kind].append(elapsed)
                print(kind, round(elapsed, 3), flush=True)
    medians = {kind: statistics.median(xs) for kind, xs in samples.items()}

    def ratio(m, base):
        return f"{m / medians[base]:.3f}" if base in medians else "-"
    rows = [[k, f"{m:.3f}", ratio(m, "none"), ratio(m, "parquet"), ratio(m, "pylance"), " ".join(f"{x:.2f}" for x in samples[k])]
            for k, m in medians.items()]
    vectors = f" with vectors of {dim} float32s" if dim else ""
    print_table(f"Append of {args.rows:,} rows{vectors}, data_storage_version {args.storage_version} (median of {args.runs}, kinds interleaved)",
                ["kind", "seconds", "vs none", "vs parquet", "vs pylance", "runs"], rows)
    spark.stop()


if __name__ == "__main__":
    main()
