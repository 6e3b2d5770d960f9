"""The Spark application of test_large_rows.py: rows of a megabyte and more with a small heap.

Usage: large_rows_child.py WAREHOUSE TABLE

Runs on `local-cluster[2,1,1024]` (two executor JVMs of 1 GiB, one task each) with a 1 GiB
driver, Spark's defaults otherwise (UI on). TABLE (`lance.db.<name>`, columns id BIGINT and a
large binary `img`) is read whole, read without its large column (the bytes the scan read from
data files are reported), copied with CTAS, and the copy is changed by UPDATE and MERGE. Prints
one JSON object: the scans' results, the bytes read, and the copy's rows as (id, length, sha1).
"""
import json
import sys

from pyspark.sql import SparkSession

import sparklance


def scan_bytes_read(df):
    """Runs `df` and returns the bytes its Lance scan read from data files (the scan's UI metric)."""
    rows = df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    read = [leaves.apply(i).metrics().get("dataBytesRead") for i in range(leaves.size())]
    return rows, sum(m.get().value() for m in read if m.isDefined())


def main():
    warehouse, table = sys.argv[1:3]
    spark = (sparklance.configure(SparkSession.builder.master("local-cluster[2,1,1024]")
                                  .appName("sparklance-large-rows"), warehouse=warehouse)
             .config("spark.driver.memory", "1g")
             .config("spark.executor.memory", "1g")
             # The metric is read off the executed plan, which adaptive execution would wrap.
             .config("spark.sql.adaptive.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = {}
    whole, out["whole_bytes_read"] = scan_bytes_read(spark.sql(f"SELECT count(*), sum(length(img)) FROM {table}"))
    out["count"], out["total_length"] = whole[0][0], whole[0][1]
    ids, out["ids_bytes_read"] = scan_bytes_read(spark.sql(f"SELECT sum(id) FROM {table}"))
    out["sum_id"] = ids[0][0]
    copy = f"{table}_copy"
    spark.sql(f"CREATE TABLE {copy} AS SELECT * FROM {table}")
    spark.sql(f"UPDATE {copy} SET img = substring(img, 1, 1000) WHERE id % 7 = 1")
    # Rows take the large value of the row before them.
    spark.sql(f"MERGE INTO {copy} t USING (SELECT id + 1 AS id, img FROM {table} WHERE id % 5 = 2) s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET img = s.img")
    out["copy"] = [list(r) for r in spark.sql(f"SELECT id, length(img), sha1(img) FROM {copy} ORDER BY id").collect()]
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
