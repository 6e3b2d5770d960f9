"""Clustering benchmark: filters on either of two columns of a table whose rows arrived in random
order, before and after a Z-order compaction (`compact(zorder_by => 'a, b')`) and after clustering
(`ALTER TABLE ... CLUSTER BY (a, b)`, then `compact(recluster => true)`: a Hilbert curve).

ROWS rows: a and b BIGINT, independent and uniform over 0..999,999 (random, so no zone of the
unclustered table skips), v DOUBLE, payload STRING (64 bytes). Three Lance tables are written from
the same DataFrame (max_rows_per_file 1,048,576; zone maps on every column, 8,192 rows a zone),
two of them then compacted with a layout; the compaction times are printed. Queries (each returns
the same rows from every table, checked), 1 warm-up + RUNS timed rounds in turns, median:
  a point   count and sum WHERE a = <one value>
  b point   count and sum WHERE b = <one value>
  a range   count and sum WHERE a in a 1% range
  b range   count and sum WHERE b in a 1% range
with the data-file bytes each scan read (sparklance's scan metric) and the ratios to the unclustered
table. The goal: a filter on b, the second clustering column, reads <= 10% of the bytes.

Run: .venv/bin/python bench/clustering.py [--rows 10000000] [--runs 5]"""
import argparse
import time

from common import print_table, scratch_dir, spark_session, timed_in_turns
from skipping import scan_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    root = scratch_dir("sparklance-bench-")
    spark = spark_session(root / "warehouse")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(args.rows).selectExpr(
        "abs(xxhash64(id, 1)) % 1000000 AS a", "abs(xxhash64(id, 2)) % 1000000 AS b", "id * 0.5 AS v",
        "sha2(CAST(id AS STRING), 256) AS payload")
    tables = {"unclustered": "lance.bench.plain", "z-order a,b": "lance.bench.z", "clustered a,b": "lance.bench.c"}
    for name in tables.values():
        spark.sql(f"CREATE TABLE {name} (a BIGINT, b BIGINT, v DOUBLE, payload STRING)")
        df.writeTo(name).append()
    spark.sql("ALTER TABLE lance.bench.c CLUSTER BY (a, b)")
    layouts = {"z-order a,b": "zorder_by => 'a, b'", "clustered a,b": "recluster => true"}
    compaction = {}
    for system, layout in layouts.items():
        start = time.perf_counter()
        spark.sql(f"CALL lance.system.compact(table => '{tables[system].removeprefix('lance.')}', {layout})").collect()
        compaction[system] = time.perf_counter() - start
        print(f"compact {layout}: {compaction[system]:.1f} s", flush=True)

    value, low, width = 123_457, 500_000, 10_000
    queries = {
        "a point": f"SELECT count(*), sum(v) FROM {{t}} WHERE a = {value}",
        "b point": f"SELECT count(*), sum(v) FROM {{t}} WHERE b = {value}",
        "a range": f"SELECT count(*), sum(v) FROM {{t}} WHERE a BETWEEN {low} AND {low + width - 1}",
        "b range": f"SELECT count(*), sum(v) FROM {{t}} WHERE b BETWEEN {low} AND {low + width - 1}",
    }
    systems = list(tables)
    rows = []
    for query_name, query in queries.items():
        answers, read = {}, {}
        for system, table in tables.items():
            q = spark.sql(query.format(t=table))
            answers[system] = q.collect()
            read[system] = scan_bytes(q)
        assert all(a == answers["unclustered"] for a in answers.values()), (query_name, answers)
        medians = timed_in_turns({s: lambda sql=query.format(t=t): spark.sql(sql).collect() for s, t in tables.items()},
                                 runs=args.runs, warmup=1)
        rows.append([query_name] + [f"{medians[s] * 1000:.0f}" for s in systems] +
                    [f"{read[s] / 1e6:.1f}" for s in systems] +
                    [f"{read[s] / read['unclustered']:.3f}" for s in systems[1:]] +
                    [f"{medians[s] / medians['unclustered']:.2f}" for s in systems[1:]])
        print(query_name, {s: round(medians[s], 3) for s in systems}, read, flush=True)
    header = (["query"] + [f"{s} ms" for s in systems] + [f"{s} MB" for s in systems] +
              [f"{s} bytes ratio" for s in systems[1:]] + [f"{s} time ratio" for s in systems[1:]])
    print_table(f"filters on {args.rows} rows, before and after a layout (compaction: " +
                ", ".join(f"{s} {t:.1f} s" for s, t in compaction.items()) + ")", header, rows)


if __name__ == "__main__":
    main()
