"""The Spark application of test_vector_index_cluster.py: on `local-cluster[2,1,1024]` (two executor
JVMs, one task each), builds an IVF_PQ index of a table's `emb` with CREATE INDEX, searches it with
vector_search, and runs an EXACT NEAREST join (sparklance's exact search).

Usage: vector_index_cluster_child.py WAREHOUSE TABLE QUERIES.npy K
Prints one line `RESULT <JSON object>`: the executors, the ids vector_search returns per query, and
the join's (qid, id, value) rows with its plan's shape (exact search, cross join).
"""
import json
import sys
import time

import numpy as np
from pyspark.sql import SparkSession

import sparklance


def main():
    warehouse, table, queries_path, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = (sparklance.configure(SparkSession.builder.master("local-cluster[2,1,1024]")
                                  .appName("sparklance-vector-index-cluster"), warehouse=warehouse)
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    queries = np.load(queries_path)
    started = time.monotonic()

    def executors():
        return spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver

    # Executors register after the session starts: wait (up to 3 minutes) for both, so both build.
    while executors() < 2 and time.monotonic() - started < 180:
        time.sleep(0.5)
    print(f"executors up after {time.monotonic() - started:.1f} s", file=sys.stderr)
    spark.sql(f"CREATE INDEX emb_idx ON {table} USING ivf_pq (emb) "
              "OPTIONS (num_partitions = 6, num_sub_vectors = 8, metric = 'l2')")
    print(f"index built after {time.monotonic() - started:.1f} s", file=sys.stderr)
    searched = []
    for q in queries:
        vector = "array(" + ", ".join(f"CAST({float(x)!r} AS FLOAT)" for x in q) + ")"
        searched.append([r.id for r in spark.sql(
            f"SELECT id FROM vector_search(table => '{table}', vector_column => 'emb', query_vector => {vector}, "
            f"k => {k}, distance_type => 'l2')").collect()])
    spark.createDataFrame([(i, q.tolist()) for i, q in enumerate(queries)], "qid BIGINT, v ARRAY<FLOAT>") \
        .createOrReplaceTempView("q")
    join = (f"SELECT q.qid, t.id, vector_l2_distance(q.v, t.emb) AS value FROM q JOIN {table} t "
            f"EXACT NEAREST {k} BY DISTANCE vector_l2_distance(q.v, t.emb)")

    def run():
        df = spark.sql(join)
        rows = [[r.qid, r.id, r.value] for r in df.collect()]
        plan = df._jdf.queryExecution().executedPlan().toString()
        return rows, "ExactNearest" in plan, "NestedLoopJoin" in plan or "CartesianProduct" in plan

    print(f"searched after {time.monotonic() - started:.1f} s", file=sys.stderr)
    exact = run()
    print(f"exact join after {time.monotonic() - started:.1f} s", file=sys.stderr)
    print("RESULT " + json.dumps({"executors": executors(), "searched": searched, "exact": exact}))
    spark.stop()


if __name__ == "__main__":
    main()
