"""Data skipping benchmark: filters on a table clustered by its key, as Lance (with a ZONEMAP index
on the key), Parquet and Delta Lake, written from the same DataFrame.

ROWS rows in 10 partitions / files, range partitioned and sorted by `k`: k BIGINT, day DATE (100,000
rows a day), v DOUBLE, s STRING (short), payload STRING (64 bytes). The Lance table has
the defaults: its zone maps (on its first 32 columns, here all five, 8,192 rows a zone) are those its append commits, gathered by the write tasks, and its optimized
write keeps the input's range partitions.
Queries, 3 warm-up + 5 timed rounds in which the systems take turns, median, and the ratio
sparklance / each other system:
  point   SELECT * WHERE k = <one key>
  range   count and sums over a 1% range of k
  day     count and sums WHERE day = <one day> (1% of rows)
sparklance also runs each query with data skipping off (read option data_skipping = false). The bytes
each query read are printed: sparklance's scan metric of data-file bytes, Spark's size of the files
a Parquet or Delta scan opened.
Then a MERGE of 1% clustered keys (UPDATE SET v where matched, INSERT where not; 1% of its keys are
new on the first run) into the Lance and Delta tables, 1 warm-up + 5 timed runs each on the table the previous run
left: sparklance with its target scan skipping by the source's keys, and with dynamic pruning off
(spark.sql.optimizer.dynamicPartitionPruning.enabled = false), against Delta's MERGE; the Lance
table keeps its zone maps current (by default), so rewritten rows stay skippable.

Run: bench/setup && .venv-bench/bin/python bench/skipping.py [--rows 10000000]
(or, without Delta Lake: .venv/bin/python bench/skipping.py --no-delta)"""
import argparse
from pathlib import Path

from common import print_table, scratch_dir, spark_session, timed, timed_in_turns


def scan_bytes(df):
    """The bytes the query's scans read, subqueries' included, by their own metrics (data-file bytes
    for sparklance, size of the files opened for Parquet and Delta), or None if the plan has no such
    metric (Delta's MERGE reads in jobs of its own)."""
    total, found = 0, False
    nodes = [df._jdf.queryExecution().executedPlan()]
    while nodes:
        node = nodes.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            nodes.append(node.executedPlan())
            continue
        if name.endswith("QueryStageExec"):
            nodes.append(node.plan())
            continue
        if name == "CommandResultExec":
            nodes.append(node.commandPhysicalPlan())
            continue
        # Runtime filters' subqueries (a MERGE's fragment or key filter) read too.
        subqueries = node.subqueries()
        nodes.extend(subqueries.apply(i) for i in range(subqueries.size()))
        metrics = node.metrics()
        for metric in ("dataBytesRead", "filesSize"):
            if metrics.contains(metric):
                total += metrics.apply(metric).value()
                found = True
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    return total if found else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-delta", action="store_true", help="compare with Parquet only")
    args = ap.parse_args()
    with_delta = not args.no_delta
    rows = args.rows
    root = scratch_dir("sparklance-bench-")
    spark = spark_session(root / "warehouse", with_delta=with_delta)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(rows).selectExpr(
        "id AS k", "date_add(DATE'2020-01-01', CAST(id DIV 100000 AS INT)) AS day", "id * 0.5 AS v",
        "concat('s', CAST(id % 1000 AS STRING)) AS s", "sha2(CAST(id AS STRING), 256) AS payload")
    clustered = df.repartitionByRange(10, "k").sortWithinPartitions("k")
    spark.sql("CREATE TABLE lance.bench.t (k BIGINT, day DATE, v DOUBLE, s STRING, payload STRING)")
    clustered.writeTo("lance.bench.t").append()
    parquet, delta = root / "parquet", root / "delta"
    clustered.write.parquet(str(parquet))
    if with_delta:
        clustered.write.format("delta").save(str(delta))

    key = rows // 2 + 12345
    low = rows // 3
    day = f"date_add(DATE'2020-01-01', {rows // 100000 // 2})"
    queries = {
        "point": f"SELECT * FROM {{t}} WHERE k = {key}",
        "range": f"SELECT count(*), sum(v), max(s) FROM {{t}} WHERE k BETWEEN {low} AND {low + rows // 100 - 1}",
        "day": f"SELECT count(*), sum(v), max(s) FROM {{t}} WHERE day = {day}",
    }
    tables = {"sparklance": "lance.bench.t", "no skipping": "lance.bench.t WITH ('data_skipping' = 'false')",
              "parquet": f"parquet.`{parquet}`", "delta": f"delta.`{delta}`"}
    if not with_delta:
        del tables["delta"]
    results = []
    for name, query in queries.items():
        answers, read = {}, {}
        for system, table in tables.items():
            df_q = spark.sql(query.format(t=table))
            answers[system] = sorted(map(tuple, df_q.collect()))
            read[system] = scan_bytes(df_q)
        medians = timed_in_turns({system: lambda sql=query.format(t=table): spark.sql(sql).collect()
                                  for system, table in tables.items()}, runs=args.runs, warmup=3)
        assert all(a == answers["parquet"] for a in answers.values()), (name, answers)
        results.append((name, medians, read))
        print(name, {k: round(v, 3) for k, v in medians.items()}, read, flush=True)

    # MERGE of 1% clustered keys; the last 1/100 of them are new keys (above every existing one).
    first, n, fresh = rows // 5, rows // 100, rows // 10000
    spark.range(first, first + n).selectExpr(
        f"IF(id < {first + n - fresh}, id, id + {rows}) AS k", "date_add(DATE'2020-01-01', CAST(id DIV 100000 AS INT)) AS day",
        "-id * 0.5 AS v", "'merged' AS s", "sha2(CAST(id AS STRING), 256) AS payload").createOrReplaceTempView("merge_src")
    merge = ("MERGE INTO {t} t USING merge_src s ON t.k = s.k "
             "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    pruning = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
    merges, merge_read = {}, {}
    merged = [("sparklance", "lance.bench.t", "true"), ("no skipping", "lance.bench.t", "false")]
    if with_delta:
        merged.append(("delta", f"delta.`{delta}`", "true"))
    for system, table, dpp in merged:
        spark.conf.set(pruning, dpp)
        sql = merge.format(t=table)
        merges[system], _ = timed(lambda sql=sql: spark.sql(sql).collect(), runs=args.runs)
        # Bytes of one more run, like the timed ones (the first moved the matched rows).
        merge_read[system] = scan_bytes(spark.sql(sql))
    spark.conf.unset(pruning)
    if with_delta:
        counts = [spark.sql(f"SELECT count(*), sum(v) FROM {t}").collect() for t in ("lance.bench.t", f"delta.`{delta}`")]
        assert counts[0] == counts[1], counts
    merges["parquet"], merge_read["parquet"] = float("nan"), None
    results.append(("merge 1%", merges, merge_read))
    print("merge", {k: round(v, 3) for k, v in merges.items()}, merge_read, flush=True)

    systems = list(tables)
    others = [o for o in ("no skipping", "parquet", "delta") if o in systems]
    header = ["query"] + [f"{s} s" for s in systems] + [f"vs {o}" for o in others] + \
        [f"{s} MB read" for s in systems]
    table = [[name] + ["-" if m[s] != m[s] else f"{m[s]:.3f}" for s in systems] +
             ["-" if m[o] != m[o] else f"{m['sparklance'] / m[o]:.2f}" for o in others] +
             ["-" if r[s] is None else f"{r[s] / 1e6:.1f}" for s in systems]
             for name, m, r in results]
    print_table(f"Filters on {rows:,} rows clustered by k (median of {args.runs})", header, table)
    spark.stop()


if __name__ == "__main__":
    main()
