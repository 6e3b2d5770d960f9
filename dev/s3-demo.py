"""sparklance on S3: a warehouse s3a://<bucket>/warehouse, written by Spark and read by pylance.

    .venv/bin/python dev/s3-demo.py                       # against moto's S3 on loopback, started here
    .venv/bin/python dev/s3-demo.py --endpoint http://host:9000 --bucket b --access-key K --secret-key S

The S3A connector's jars are those ./dev/setup resolves into target/s3-connector/ (hadoop-aws 3.5.0
and the AWS SDK v2 modules it loads); elsewhere, pass --jars, or use spark.jars.packages with
org.apache.hadoop:hadoop-aws matching your Spark's Hadoop.
"""
import argparse
import glob
import os

import lance
from pyspark.sql import SparkSession

import sparklance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoint", help="an S3 API endpoint; default: start moto's S3 on loopback")
    ap.add_argument("--bucket", default="sparklance-demo")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--access-key", default="testing")
    ap.add_argument("--secret-key", default="testing")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--jars", default=",".join(sorted(glob.glob(os.path.join(ROOT, "target", "s3-connector", "*.jar")))))
    args = ap.parse_args()

    server = None
    if args.endpoint is None:
        import logging
        from moto.server import ThreadedMotoServer
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        args.endpoint = f"http://{host}:{port}"
    if server is not None or args.bucket == "sparklance-demo":
        import boto3
        s3 = boto3.client("s3", endpoint_url=args.endpoint, region_name=args.region,
                          aws_access_key_id=args.access_key, aws_secret_access_key=args.secret_key)
        if args.bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
            s3.create_bucket(Bucket=args.bucket)

    # The S3A settings, once: configure() sets them as spark.hadoop.*, for the driver and every executor.
    hadoop = {
        "fs.s3a.endpoint": args.endpoint,
        "fs.s3a.endpoint.region": args.region,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": str(args.endpoint.startswith("https")).lower(),
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": args.access_key,
        "fs.s3a.secret.key": args.secret_key,
    }
    builder = SparkSession.builder.master(args.master).appName("sparklance-s3-demo").config("spark.jars", args.jars)
    spark = sparklance.configure(builder, f"s3a://{args.bucket}/warehouse", hadoop=hadoop).getOrCreate()

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.demo")
    spark.sql("DROP TABLE IF EXISTS lance.demo.events PURGE")
    spark.sql("CREATE TABLE lance.demo.events (id BIGINT NOT NULL, kind STRING, score DOUBLE)")
    spark.sql("INSERT INTO lance.demo.events SELECT id, IF(id % 2 = 0, 'even', 'odd'), id / 10.0 FROM range(1000)")
    spark.sql("UPDATE lance.demo.events SET score = score * 2 WHERE kind = 'odd'")
    spark.sql("DELETE FROM lance.demo.events WHERE id >= 900")
    spark.sql("""MERGE INTO lance.demo.events t
                 USING (SELECT id, 'merged' AS kind, 0.0 AS score FROM range(850, 950)) s ON t.id = s.id
                 WHEN MATCHED THEN UPDATE SET kind = s.kind WHEN NOT MATCHED THEN INSERT *""")
    spark.sql("SELECT kind, count(*) AS n, round(sum(score), 1) AS score FROM lance.demo.events GROUP BY kind ORDER BY kind").show()
    spark.sql("SELECT version, operation, rows_added, rows_deleted FROM lance.demo.events.history").show()

    # pylance opens the same table with its own S3 options.
    ds = lance.dataset(f"s3://{args.bucket}/warehouse/demo/events.lance", storage_options={
        "aws_endpoint": args.endpoint, "aws_region": args.region, "aws_access_key_id": args.access_key,
        "aws_secret_access_key": args.secret_key, "allow_http": "true"})
    print(f"pylance reads version {ds.version}: {ds.count_rows()} rows")
    spark.stop()
    if server is not None:
        server.stop()


if __name__ == "__main__":
    main()
