"""S3 benchmark: a scan and a MERGE of a 1M-row table on S3 (moto on loopback, through S3A) and the
same on local disk, in one Spark process (local[2]); the S3 requests each statement sends (LIST,
GET, HEAD, PUT, POST, DELETE) as the server counted them, and the requests of pylance's own scan
(to_table) and merge_insert of the same table and source.

  scan        SELECT sum(id), sum(k), max(s), sum(d): every column, every row
  merge       MERGE of 10,000 source rows: 1% of the ids, spread over the table (UPDATE SET d), and
              1,000 new ones (INSERT)
  scan after  the scan again, after the MERGEs: 1% of every fragment's rows deleted, a few fragments
              more (pylance's scan is of this table)

Printed: median seconds of --runs after a warm-up, the ratio of S3 to local disk, and the median
request counts per statement. moto is a Python server (one request at a time here, for atomic
conditional PUTs), so S3 times measure request counts and sizes more than S3's own latency;
`--latency-ms` has every request wait that long first (side by side, as S3's first bytes do),
which shows what reads overlapping each other and the decoding save.

Run: bench/setup && .venv-bench/bin/python bench/s3.py [--rows 1000000] [--runs 3] [--latency-ms 30] [--jar J]"""
import argparse
import glob
import os
import statistics
import sys
import time
from pathlib import Path

import lance
import pyarrow as pa

from common import print_table, scratch_dir, spark_session, timed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integration-tests"))
from s3_server import S3Server  # noqa: E402  (the test suite's loopback S3)

KINDS = ["LIST", "GET", "HEAD", "PUT", "POST", "DELETE"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jar", help="the sparklance jar to run instead of the package's")
    ap.add_argument("--latency-ms", type=int, default=0,
                    help="delay every request by this much before the server serves it, as S3's first byte comes")
    args = ap.parse_args()
    if args.jar:
        import sparklance
        sparklance.jar_path = lambda: args.jar

    server = S3Server(latency_ms=args.latency_ms)
    server.create_bucket("lakehouse")
    jars = sorted(glob.glob(str(ROOT / "target" / "s3-connector" / "*.jar")))
    if not jars:
        sys.exit("target/s3-connector/ holds no jars: run ./dev/setup")
    local = scratch_dir("sparklance-bench-s3-")
    spark = spark_session(local / "warehouse", jars=jars)
    spark.conf.set("spark.sql.catalog.s3lance", "sparklance.spark.LanceCatalog")
    spark.conf.set("spark.sql.catalog.s3lance.warehouse", "s3a://lakehouse/warehouse")
    for k, v in server.hadoop_conf().items():
        spark.conf.set(f"spark.sql.catalog.s3lance.hadoop.{k}", v)
    print(f"{args.rows:,} rows, {args.latency_ms} ms a request, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

    rows, step = args.rows, 100
    source = (f"SELECT id, CAST(-1 AS DOUBLE) AS d FROM range(0, {rows}, {step}) "
              f"UNION ALL SELECT id, CAST(-2 AS DOUBLE) AS d FROM range({rows}, {rows + rows // 1000})")
    spark.sql(source).createOrReplaceTempView("src")
    results, requests = {}, {}
    for catalog in ["lance", "s3lance"]:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
        t = f"{catalog}.db.t"
        spark.sql(f"CREATE TABLE {t} TBLPROPERTIES ('max_rows_per_file' = '{rows // 10}') AS "
                  f"SELECT id, CAST(id % 100000 AS INT) AS k, concat('s', id) AS s, CAST(id AS DOUBLE) / 3 AS d FROM range({rows})")
        scan = lambda: spark.sql(f"SELECT sum(id), sum(k), max(s), sum(d) FROM {t}").collect()
        statements = {
            "scan": scan,
            "merge": lambda: spark.sql(f"MERGE INTO {t} USING src ON {t}.id = src.id WHEN MATCHED THEN UPDATE SET d = src.d "
                                       f"WHEN NOT MATCHED THEN INSERT (id, k, s, d) VALUES (src.id, 0, 'new', src.d)").collect(),
            # The MERGEs left 1% of every fragment's rows deleted: the scan reads around them.
            "scan after": scan,
        }
        for name, fn in statements.items():
            counts = []

            def counted():
                server.reset_counts()
                fn()
                counts.append(server.snapshot_counts())
            # MERGE inserts its new ids the first time and updates them after: every timed run is the same work.
            results[(name, catalog)] = timed(counted, runs=args.runs)[0]
            requests[(name, catalog)] = {k: statistics.median(c.get(k, 0) for c in counts[1:]) for k in KINDS}

    # pylance on the same S3 table: its scan of the same columns, and merge_insert of the same source.
    path, options = "s3://lakehouse/warehouse/db/t.lance", server.storage_options()
    # The same change as full rows (pylance inserts whole rows): the matched rows' k and s as they are.
    src = spark.sql("SELECT src.id, coalesce(t.k, 0) AS k, coalesce(t.s, 'new') AS s, src.d FROM src "
                    "LEFT JOIN s3lance.db.t t ON t.id = src.id").toPandas()
    src_table = pa.Table.from_pandas(src, preserve_index=False).cast(lance.dataset(path, storage_options=options).schema)
    # pylance's scan runs after the MERGEs, on the table "scan after" read.
    for name, fn in {
        "scan after": lambda: lance.dataset(path, storage_options=options).to_table(columns=["id", "k", "s", "d"]),
        "merge": lambda: lance.dataset(path, storage_options=options).merge_insert("id").when_matched_update_all()
            .when_not_matched_insert_all().execute(src_table),
    }.items():
        counts = []

        def counted():
            server.reset_counts()
            fn()
            counts.append(server.snapshot_counts())
        results[(name, "pylance")] = timed(counted, runs=args.runs)[0]
        requests[(name, "pylance")] = {k: statistics.median(c.get(k, 0) for c in counts[1:]) for k in KINDS}

    table = []
    for name in ["scan", "merge", "scan after"]:
        for system, label in [("lance", "sparklance, local disk"), ("s3lance", "sparklance, S3"), ("pylance", "pylance, S3")]:
            if (name, system) not in results:
                continue
            r = requests[(name, system)]
            table.append([name, label, f"{results[(name, system)]:.2f}",
                          f"{results[(name, system)] / results[(name, 'lance')]:.2f}",
                          *(("-" if system == "lance" else f"{r[k]:g}") for k in KINDS)])
    print_table("seconds (median), ratio to local disk, S3 requests per statement (median)",
                ["op", "system", "seconds", "/ local", *KINDS], table)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    spark.stop()
    server.close()


if __name__ == "__main__":
    main()
