"""Change data benchmark: reading the changes of one commit.

A table of ROWS rows in 10 fragments / files (id BIGINT, a INT, b DOUBLE, c STRING), one per Lance
data_storage_version of --versions (2.2 and 2.0: their decoders differ); one commit
updates 1% of the rows spread over every fragment (id % 100 = 7), then one deletes 0.1% and one
merges 1% (half matched, half new). For each of these commits the changes are read (every column,
written to Spark's no-op sink) by:
  sparklance   SELECT * FROM t CHANGES FROM VERSION v TO VERSION v (computeUpdates)
  version diff the same Lance table, two versions compared with EXCEPT ALL both ways: what one does
               without change data
  delta CDF    Delta Lake's table_changes on a table with change data feed and deletion vectors
The timed write of each commit is printed too: Delta's change data feed writes change files while
committing, sparklance derives changes from row lineage at read time. Median of RUNS runs after a
warm-up, same Spark process.

Run: bench/setup && .venv-bench/bin/python bench/changes.py [--rows 5000000] [--runs 3] [--versions 2.2,2.0]"""
import argparse
import time
from pathlib import Path

from common import print_table, scratch_dir, spark_session, timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default="sparklance,diff,delta")
    ap.add_argument("--versions", default="2.2,2.0", help="Lance data_storage_versions of the tables read")
    args = ap.parse_args()
    versions = args.versions.split(",")
    # sparklance and diff are read from a table per Lance file version.
    per_version = [s for s in args.systems.split(",") if s != "delta"]
    systems = [f"{s} {ver}" for ver in versions for s in per_version] + [s for s in args.systems.split(",") if s == "delta"]
    tables = {ver: f"lance.bench.t_{ver.replace('.', '_')}" for ver in versions}
    rows = args.rows
    root = scratch_dir("sparklance-bench-")
    spark = spark_session(root / "warehouse", with_delta="delta" in systems)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.bench")
    df = spark.range(rows).selectExpr("id", "CAST(id % 1000 AS INT) AS a", "id * 0.5 AS b",
                                      "concat('name-', CAST(id % 100000 AS STRING)) AS c")
    for ver, t in tables.items():
        spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, a INT, b DOUBLE, c STRING) TBLPROPERTIES "
                  f"('max_rows_per_file' = '{rows // 10}', 'enable_stable_row_ids' = 'true', 'data_storage_version' = '{ver}')")
        df.repartitionByRange(10, "id").writeTo(t).append()
    delta = root / "delta"
    if "delta" in systems:
        df.repartitionByRange(10, "id").write.format("delta") \
            .option("delta.enableDeletionVectors", "true").option("delta.enableChangeDataFeed", "true").save(str(delta))
    spark.range(rows, rows + rows // 200).selectExpr("id", "-1 AS a", "id * -1.0 AS b", "'merged' AS c") \
        .union(spark.range(0, rows, 200).selectExpr("id + 3 AS id", "-1 AS a", "id * -1.0 AS b", "'merged' AS c")) \
        .createOrReplaceTempView("src")
    spark.table("src").cache().count()

    commits = {
        "update 1%": "UPDATE {t} SET b = b + 1 WHERE id % 100 = 7",
        "delete 0.1%": "DELETE FROM {t} WHERE id % 1000 = 11",
        "merge 1%": "MERGE INTO {t} t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                    "WHEN NOT MATCHED THEN INSERT *",
    }
    targets = {**{f"sparklance {ver}": t for ver, t in tables.items()}, "delta": f"delta.`{delta}`"}
    written = [s for s in targets if s != "delta" or "delta" in systems]
    results = []
    for name, statement in commits.items():
        writes = {}
        for system, table in targets.items():
            if system in written:  # the Lance tables take every commit: diff reads them too
                start = time.perf_counter()
                spark.sql(statement.format(t=table))
                writes[system] = time.perf_counter() - start
        dv = spark.sql(f"DESCRIBE HISTORY delta.`{delta}` LIMIT 1").head()["version"] if "delta" in systems else None
        reads = {"delta": lambda: spark.sql(f"SELECT * FROM table_changes_by_path('{delta}', {dv}, {dv})")}
        for ver, t in tables.items():
            v = spark.sql(f"SELECT max(version) FROM {t}.history").head()[0]
            reads[f"sparklance {ver}"] = lambda t=t, v=v: spark.sql(
                f"SELECT * FROM {t} CHANGES FROM VERSION {v} TO VERSION {v} WITH (computeUpdates = 'true')")
            reads[f"diff {ver}"] = lambda t=t, v=v: spark.sql(
                f"(SELECT * FROM {t} VERSION AS OF {v} EXCEPT ALL SELECT * FROM {t} VERSION AS OF {v - 1}) "
                f"UNION ALL (SELECT * FROM {t} VERSION AS OF {v - 1} EXCEPT ALL SELECT * FROM {t} VERSION AS OF {v})")
        counts = {s: reads[s]().count() for s in systems}
        medians = {s: timed(lambda s=s: reads[s]().write.format("noop").mode("overwrite").save(), runs=args.runs)[0]
                   for s in systems}
        results.append((name, writes, counts, medians))
        print(name, {k: round(x, 3) for k, x in medians.items()}, counts, open("/proc/loadavg").read().split()[:3], flush=True)

    ratios = [(f"sparklance {ver}", other) for ver in versions for other in systems
              if f"sparklance {ver}" in systems and (other == "delta" or other == f"diff {ver}")]
    header = ["commit", "changed rows"] + [f"read {s} s" for s in systems] + \
        [f"{a}/{b}" for a, b in ratios] + [f"write {s} s" for s in written]
    table = [[name, str(counts[systems[0]])] + [f"{m[s]:.3f}" for s in systems] +
             [f"{m[a] / m[b]:.2f}" for a, b in ratios] +
             [f"{w[s]:.3f}" for s in written]
             for name, w, counts, m in results]
    print_table(f"Reading one commit's changes, {rows:,} rows in 10 fragments (median of {args.runs})", header, table)
    spark.stop()


if __name__ == "__main__":
    main()
