"""Scan benchmark: the same table as Lance (written by sparklance, in each file version asked for)
and as Parquet (written by Spark).

ROWS rows of 8 columns: i32, i64, f32, f64, a short string, a 64-byte string, a boolean and a
128-dim float vector. ("f64" is `id * 0.25`, which Spark SQL types DECIMAL(23, 2): kept as it was
first measured, it is the table's decimal column.) Queries, each 1 warm-up + 5 timed runs, median and Lance/Parquet ratio:
  full        a sum over every column
  projection  two columns
  filter      a selective filter (0.1% of rows)
  broad       a filter keeping 90% of rows
  filter 3    the selective filter, reading three narrow columns besides
  filter wide the selective filter, reading the 64-byte strings and the vectors besides
  count       COUNT(*)

With --per-column, each column is also summed alone. With --pylance, pylance's own scan of the
same Lance table (the query's columns and filter, streamed batch by batch and dropped) is timed
too, as the native reference. `--jar` runs another sparklance jar (an older build, to compare before
and after a change).

Run: bench/setup && .venv-bench/bin/python bench/scan.py [--rows 10000000] [--versions 2.0,2.2] [--per-column] [--jar J]"""
import argparse
import math
from pathlib import Path

import lance
import sparklance

from common import print_table, scratch_dir, spark_session, timed

QUERIES = {
    "full": "SELECT sum(i32), sum(i64), sum(f32), sum(f64), sum(length(s_short)), sum(length(s_64)), "
            "sum(CAST(flag AS INT)), sum(emb[0]) FROM {t}",
    "projection": "SELECT sum(i64), sum(f64) FROM {t}",
    "filter": "SELECT count(*), sum(f32) FROM {t} WHERE i32 % 1000 = 7",
    "broad": "SELECT count(*), sum(f32) FROM {t} WHERE i32 % 10 <> 7",
    "filter 3": "SELECT count(*), sum(i64), sum(f32), sum(length(s_short)) FROM {t} WHERE i32 % 1000 = 7",
    "filter wide": "SELECT count(*), sum(length(s_64)), sum(emb[0]) FROM {t} WHERE i32 % 1000 = 7",
    "count": "SELECT count(*) FROM {t}",
}

# With --per-column: each column alone, to show which decoding path costs what.
COLUMN_QUERIES = {f"only {c}": f"SELECT {agg} FROM {{t}}" for c, agg in [
    ("i32", "sum(i32)"), ("i64", "sum(i64)"), ("f32", "sum(f32)"), ("f64", "sum(f64)"),
    ("s_short", "sum(length(s_short))"), ("s_64", "sum(length(s_64))"), ("flag", "sum(CAST(flag AS INT))"),
    ("emb", "sum(emb[0])")]}


# The columns (and filter) each query reads, for pylance's scan of the same table.
READS = {"full": (["i32", "i64", "f32", "f64", "s_short", "s_64", "flag", "emb"], None),
         "projection": (["i64", "f64"], None),
         "filter": (["i32", "f32"], "i32 % 1000 = 7"),
         "broad": (["i32", "f32"], "i32 % 10 <> 7"),
         "filter 3": (["i32", "i64", "f32", "s_short"], "i32 % 1000 = 7"),
         "filter wide": (["i32", "s_64", "emb"], "i32 % 1000 = 7"),
         "count": ([], None)}
READS.update({f"only {c}": ([c], None) for c in ["i32", "i64", "f32", "f64", "s_short", "s_64", "flag", "emb"]})


def same_rows(got, expected):
    """Equal rows, float sums within rounding: their order of addition follows the splits."""
    def same(a, b):
        return math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) and isinstance(b, float) else a == b
    return len(got) == len(expected) and all(len(g) == len(e) and all(map(same, g, e)) for g, e in zip(got, expected))


def pylance_scan(path, columns, filter):
    reader = lance.dataset(path).scanner(columns=columns, filter=filter, with_row_id=not columns).to_reader()
    rows = 0
    for batch in reader:
        rows += batch.num_rows
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--versions", default="2.0", help="Lance data_storage_versions to compare, e.g. 2.0,2.2")
    ap.add_argument("--per-column", action="store_true", help="also time each column alone")
    ap.add_argument("--pylance", action="store_true", help="also time pylance's scan of each Lance table")
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    ap.add_argument("--queries", default=",".join(QUERIES), help="queries to run, a subset of the default")
    args = ap.parse_args()
    if args.jar:
        sparklance.jar_path = lambda: args.jar
    versions = args.versions.split(",")
    root = scratch_dir("sparklance-scan-")
    spark = spark_session(root / "warehouse", memory="12g")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(args.rows).selectExpr(
        "CAST(id AS INT) AS i32", "id * 7 AS i64", "CAST(id / 3 AS FLOAT) AS f32", "id * 0.25 AS f64",
        "concat('k', CAST(id % 1000 AS STRING)) AS s_short",
        "rpad(concat('row-', CAST(id AS STRING)), 64, 'x') AS s_64", "id % 2 = 0 AS flag",
        "array_repeat(CAST(id % 97 AS FLOAT), 128) AS emb")
    df = df.withMetadata("emb", {"lance.vector_dim": 128})
    tables = {}
    for v in versions:
        tables[v] = f"lance.bench.scan_{v.replace('.', '_')}"
        df.writeTo(tables[v]).tableProperty("data_storage_version", v).create()
    # How many fragments a write made decides how many tasks a scan of it may need: printed with the timings.
    paths = {v: str(root / "warehouse" / "bench" / f"{tables[v].split('.')[-1]}.lance") for v in versions}
    for v in versions:
        print(f"Lance {v}: {len(lance.dataset(paths[v]).get_fragments())} fragments", flush=True)
    parquet = root / "scan.parquet"
    df.write.parquet(str(parquet))
    spark.read.parquet(str(parquet)).createOrReplaceTempView("pq")

    rows = []
    asked = args.queries.split(",")
    for name, q in (dict(QUERIES, **COLUMN_QUERIES) if args.per_column else QUERIES).items():
        if name in QUERIES and name not in asked:
            continue
        parquet_q = q.format(t="pq")
        expected = spark.sql(parquet_q).collect()
        parquet_t, _ = timed(lambda: spark.sql(parquet_q).collect(), runs=args.runs)
        row = [name, f"{parquet_t:.3f}"]
        for v in versions:
            lance_q = q.format(t=tables[v])
            got = spark.sql(lance_q).collect()
            assert same_rows(got, expected), (name, v, got, expected)
            lance_t, _ = timed(lambda: spark.sql(lance_q).collect(), runs=args.runs)
            row += [f"{lance_t:.3f}", f"{lance_t / parquet_t:.2f}"]
            if args.pylance:
                columns, where = READS[name]
                pylance_t, _ = timed(lambda: pylance_scan(paths[v], columns, where), runs=args.runs)
                row += [f"{pylance_t:.3f}", f"{lance_t / pylance_t:.2f}"]
        rows.append(row)
        print(row, flush=True)
    header = ["query", "parquet s"] + [h for v in versions for h in (f"lance {v} s", f"{v}/parquet") +
                                        ((f"pylance {v} s", f"{v}/pylance") if args.pylance else ())]
    print_table(f"Scans of {args.rows:,} rows, 8 columns (median of {args.runs} runs)", header, rows)
    spark.stop()


if __name__ == "__main__":
    main()
