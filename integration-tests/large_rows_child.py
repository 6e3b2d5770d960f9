"""The Spark application of test_large_rows.py: rows of a megabyte and more with a small heap.

Usage: large_rows_child.py WAREHOUSE TABLE[:copy | :in_place] ...

Runs on `local-cluster[2,1,768]` (two executor JVMs of 768 MiB, one task each) with a 768 MiB
driver, Spark's defaults otherwise (UI on), one table after another in the same application (one
start-up for all). Each TABLE (`lance.db.<name>`, columns id BIGINT and a
large binary `img`, and with `in_place` a string `note`) is read whole, read without its large
columns (the bytes the scan read from data files are reported), and then
- `copy` (the default): copied with CTAS, and the copy changed by UPDATE and MERGE;
- `in_place`: changed itself by an UPDATE of `note` in place, a MERGE of whole rows, and compacted.
Prints a line `RESULT <TABLE> <JSON object>` per table: the scans' results, the bytes read, and the
changed table's rows as (id, length, sha1) of `img` (and of `note`).
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


def run(spark, table, in_place):
    out = {}
    sums = "sum(length(img)), sum(length(note))" if in_place else "sum(length(img))"
    whole, out["whole_bytes_read"] = scan_bytes_read(spark.sql(f"SELECT count(*), {sums} FROM {table}"))
    out["count"], out["total_length"] = whole[0][0], sum(whole[0][1:])
    ids, out["ids_bytes_read"] = scan_bytes_read(spark.sql(f"SELECT sum(id) FROM {table}"))
    out["sum_id"] = ids[0][0]
    if in_place:
        changed = table
        # The statements change a few hundred rows: a few tasks shuffle them.
        spark.conf.set("spark.sql.shuffle.partitions", "4")
        spark.sql("SET spark.sparklance.rewrite_mode = columns")
        spark.sql(f"UPDATE {table} SET note = upper(note) WHERE id % 10 = 3")
        spark.sql("SET spark.sparklance.rewrite_mode = rows")
        # Rows take the large value of the row before them.
        spark.sql(f"MERGE INTO {table} t USING (SELECT id + 1 AS id, img FROM {table} WHERE id % 100 = 2) s "
                  "ON t.id = s.id WHEN MATCHED THEN UPDATE SET img = s.img")
        out["history"] = [[r.operation, r.operation_parameters.get("rows_updated_in_place")]
                          for r in spark.sql(f"SELECT * FROM {table}.history ORDER BY version").collect()]
        spark.sql(f"CALL lance.system.compact(table => '{table.split('.', 1)[1]}')")
        spark.conf.unset("spark.sql.shuffle.partitions")
        columns = "id, length(img), sha1(img), length(note), sha1(note)"
    else:
        changed = f"{table}_copy"
        spark.sql(f"CREATE TABLE {changed} AS SELECT * FROM {table}")
        spark.sql(f"UPDATE {changed} SET img = substring(img, 1, 1000) WHERE id % 7 = 1")
        # Rows take the large value of the row before them.
        spark.sql(f"MERGE INTO {changed} t USING (SELECT id + 1 AS id, img FROM {table} WHERE id % 5 = 2) s "
                  "ON t.id = s.id WHEN MATCHED THEN UPDATE SET img = s.img")
        columns = "id, length(img), sha1(img)"
    out["copy"] = [list(r) for r in spark.sql(f"SELECT {columns} FROM {changed} ORDER BY id").collect()]
    return out


def main():
    warehouse, tables = sys.argv[1], sys.argv[2:]
    spark = (sparklance.configure(SparkSession.builder.master("local-cluster[2,1,768]")
                                  .appName("sparklance-large-rows"), warehouse=warehouse)
             .config("spark.driver.memory", "768m")
             .config("spark.executor.memory", "768m")
             # The metric is read off the executed plan, which adaptive execution would wrap.
             .config("spark.sql.adaptive.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for spec in tables:
        table, _, mode = spec.partition(":")
        print(f"RESULT {table} " + json.dumps(run(spark, table, mode == "in_place")), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
