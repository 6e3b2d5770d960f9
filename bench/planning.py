"""Planning benchmark: the driver's cost of a query on a table of many fragments.

A table of FRAGMENTS fragments of 100 rows (id BIGINT, a INT, s STRING), written by sparklance
in one task (`max_rows_per_file` = 100), so every column has a zone map covering every fragment.
For each query, the median over RUNS runs after warm-up of:
  plan   parse, analysis, optimization and the scan's input partitions (data skipping included):
         everything the driver does before the first task starts
  run    the whole query, collected
beside pylance's `to_table` with the same filter (and `count_rows`) on the same table.

Run: .venv/bin/python bench/planning.py [--fragments 10000] [--runs 15]"""
import argparse
import lance

from common import print_table, scratch_dir, spark_session, timed

QUERIES = {
    "point": ("SELECT * FROM {t} WHERE id = 123457", "id = 123457"),
    "count": ("SELECT count(*) FROM {t}", None),
    "count filtered": ("SELECT count(*) FROM {t} WHERE id < 5000", "id < 5000"),
    "two columns": ("SELECT * FROM {t} WHERE a = 7 AND s = 'v5'", "a = 7 AND s = 'v5'"),
}


def planned(spark, sql):
    """Plans `sql` as Spark does before running it, input partitions included; returns how many."""
    def partitions(plan):
        leaves = plan.collectLeaves()
        found = 0
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            name = leaf.getClass().getName()
            if "BatchScanExec" in name:
                found += leaf.inputPartitions().size()
            elif "AdaptiveSparkPlanExec" in name:  # a leaf to Spark: its plan is inside
                found += partitions(leaf.inputPlan())
        return found
    return partitions(spark.sql(sql)._jdf.queryExecution().executedPlan())


def median_ms(fn, runs):
    return timed(fn, runs=runs, warmup=5)[0] * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    root = scratch_dir("sparklance-bench-planning-")
    spark = spark_session(root / "warehouse")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    spark.sql("CREATE TABLE lance.bench.many (id BIGINT, a INT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '100')")
    rows = args.fragments * 100
    # One task writes the fragments in id order, so each fragment's zone holds one id range.
    (spark.range(rows).coalesce(1).selectExpr("id", "CAST(id % 1000 AS INT) AS a", "concat('v', id % 977) AS s")
     .writeTo("lance.bench.many").option("optimize_write", "false").append())
    path = str(root / "warehouse" / "bench" / "many.lance")
    ds = lance.dataset(path)
    print(f"{len(ds.get_fragments())} fragments, {ds.count_rows()} rows")

    table = []
    for name, (sql, lance_filter) in QUERIES.items():
        sql = sql.format(t="lance.bench.many")
        partitions = planned(spark, sql)
        plan = median_ms(lambda: planned(spark, sql), args.runs)
        run = median_ms(lambda: spark.sql(sql).collect(), args.runs)
        if name.startswith("count"):
            native = median_ms(lambda: lance.dataset(path).count_rows(lance_filter), args.runs)
        else:
            native = median_ms(lambda: lance.dataset(path).to_table(filter=lance_filter), args.runs)
        table.append([name, partitions, f"{plan:.1f}", f"{run:.1f}", f"{native:.1f}", f"{run / native:.2f}x"])
    print_table(f"planning on {args.fragments} fragments (ms, medians of {args.runs})",
                ["query", "partitions", "plan", "run", "pylance", "run/pylance"], table)


if __name__ == "__main__":
    main()
