"""The Spark driver that test_streaming_kill.py kills: one local PySpark session, one streaming query.

Usage: stream_child.py WAREHOUSE LOCAL_DIR TABLE SPEC [JVM_OPTIONS]

SPEC is JSON: {"input": <directory of Parquet files>, "checkpoint": <directory>}. Boots a
`local[2]` session with Spark's defaults (UI on) and the sparklance catalog `lance` over
WAREHOUSE, reads TABLE once so that the catalog and the readers are loaded, prints
`READY <driver JVM pid>`, waits for a line on stdin, then runs a file-source -> TABLE query with
one input file per micro-batch and `Trigger.AvailableNow` from the checkpoint, and prints `DONE`
when it has consumed every file. Killed, it is restarted from the same checkpoint.
"""
import json
import sys

from pyspark.sql import SparkSession

import sparklance
from crash_child import QUICK_START_JVM


def main():
    warehouse, local_dir, table, spec = sys.argv[1:5]
    spec = json.loads(spec)
    jvm_options = " ".join([QUICK_START_JVM, f"-Djava.io.tmpdir={local_dir}"] + sys.argv[5:])
    spark = (sparklance.configure(SparkSession.builder.master("local[2]").appName("sparklance-stream-child"),
                                  warehouse=warehouse)
             .config("spark.local.dir", local_dir)
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", jvm_options)
             .getOrCreate())
    target = spark.table(table)
    target.limit(1).collect()
    print("READY", spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), flush=True)
    sys.stdin.readline()
    query = (spark.readStream.schema(target.schema).option("maxFilesPerTrigger", 1).parquet(spec["input"])
             .writeStream.option("checkpointLocation", spec["checkpoint"])
             .trigger(availableNow=True).toTable(table))
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
