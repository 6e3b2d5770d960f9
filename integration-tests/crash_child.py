"""The Spark driver that test_driver_crash.py kills: one local PySpark session, one statement.

Usage: crash_child.py WAREHOUSE LOCAL_DIR TABLE STATEMENT [JVM_OPTIONS]

Boots a `local[2]` session with Spark's defaults (UI on) and the sparklance catalog `lance` over
WAREHOUSE, reads one row of TABLE so that the catalog and the readers are loaded, prints
`READY <driver JVM pid>`, waits for a line on stdin, runs STATEMENT and prints `DONE`. The wait
lets the parent start its watch exactly when the statement starts, and the JVM pid lets it
confirm that the whole driver died, not just this Python process. JVM_OPTIONS are added to the
driver JVM's (the parent uses them for a class-data-sharing archive that shortens start-up).
"""
import sys

from pyspark.sql import SparkSession

import sparklance

# The driver lives for a few seconds: C1-only compilation and the serial collector roughly halve
# its start-up on two shared cores, and change nothing about what it writes or when. The JVM's own
# warnings (class-data sharing prints many) go to stderr: stdout carries READY and DONE, and a
# JVM blocked on a full stdout pipe would never exit.
QUICK_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr"


def main():
    warehouse, local_dir, table, statement = sys.argv[1:5]
    # A killed driver leaves its scratch directories behind: they go to LOCAL_DIR, which the parent removes.
    jvm_options = " ".join([QUICK_START_JVM, f"-Djava.io.tmpdir={local_dir}"] + sys.argv[5:])
    spark = (sparklance.configure(SparkSession.builder.master("local[2]").appName("sparklance-crash-child"),
                                  warehouse=warehouse)
             .config("spark.local.dir", local_dir)
             .config("spark.driver.extraJavaOptions", jvm_options)
             .getOrCreate())
    spark.table(table).limit(1).collect()
    print("READY", spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), flush=True)
    sys.stdin.readline()
    spark.sql(statement)
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
