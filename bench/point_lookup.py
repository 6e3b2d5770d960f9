"""Point lookups on an unclustered key: sparklance with a BTREE index (and a BITMAP on a low-cardinality
column) against Parquet and against sparklance without the indices, on the same rows.

The table: ROWS rows in FRAGMENTS fragments / files, in random key order, so that neither zone maps
nor Parquet's row-group statistics can rule anything out: k BIGINT (random, distinct), s STRING
(1,000 distinct values), v DOUBLE, payload STRING (64 bytes). sparklance's table gets
`CREATE INDEX ... USING btree (k)` and `... USING bitmap (s)`. pylance's `to_table(filter=...)` on the
same Lance table (with the same indices, which pylance uses) is printed for reference.

Queries, 3 warm-up + RUNS timed rounds in which the systems take turns, median, ratio against Parquet:
  key     SELECT * WHERE k = <one key>                      (one row)
  keys    SELECT * WHERE k IN (<10 keys>)                   (ten rows)
  value   SELECT count(*), sum(v) WHERE s = <one value>      (0.1% of rows)
Goal (issue 35): key lookup <= 0.2x Parquet.

Run: .venv/bin/python bench/point_lookup.py [--rows 1000000] [--runs 5]"""
import argparse
import random

import lance

from common import print_table, scratch_dir, spark_session, timed_in_turns


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--fragments", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = scratch_dir("sparklance-lookup-bench-")
    spark = spark_session(root / "warehouse")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    df = (spark.range(args.rows)
          .selectExpr("xxhash64(id, 11) AS k", "concat('value-', CAST(id % 1000 AS STRING)) AS s",
                      "id * 0.5 AS v", "sha2(CAST(id AS STRING), 256) AS payload")
          .repartition(args.fragments))
    spark.sql(f"CREATE TABLE lance.db.t (k BIGINT, s STRING, v DOUBLE, payload STRING) TBLPROPERTIES "
              f"('max_rows_per_file' = '{-(-args.rows // args.fragments)}', 'optimize_write' = 'false')")
    df.writeTo("lance.db.t").append()
    parquet = root / "parquet"
    spark.table("lance.db.t").write.parquet(str(parquet))
    spark.sql("CREATE INDEX k_ix ON lance.db.t USING btree (k)")
    spark.sql("CREATE INDEX s_ix ON lance.db.t USING bitmap (s)")
    path = str(root / "warehouse" / "db" / "t.lance")

    keys = [r.k for r in spark.table("lance.db.t").select("k").sample(fraction=min(1.0, 100 / args.rows), seed=3).collect()]
    random.Random(5).shuffle(keys)
    key, ten = keys[0], keys[:10]
    queries = {
        "key": (f"SELECT * FROM {{t}} WHERE k = {key}", f"k = {key}"),
        "keys": (f"SELECT * FROM {{t}} WHERE k IN ({', '.join(map(str, ten))})", f"k IN ({', '.join(map(str, ten))})"),
        "value": ("SELECT count(*), sum(v) FROM {t} WHERE s = 'value-17'", "s = 'value-17'"),
    }
    tables = {"sparklance": "lance.db.t", "no index": "lance.db.t WITH ('data_skipping' = 'false')",
              "parquet": f"parquet.`{parquet}`"}
    rows = []
    for name, (sql, pylance_filter) in queries.items():
        answers = {system: sorted(map(tuple, spark.sql(sql.format(t=table)).collect())) for system, table in tables.items()}
        assert all(a == answers["parquet"] for a in answers.values()), (name, answers)

        def pylance_query(f=pylance_filter, aggregate=name == "value"):
            result = lance.dataset(path).to_table(filter=f, columns=["v"] if aggregate else None)
            return result.num_rows

        fns = {system: (lambda q=sql.format(t=table): spark.sql(q).collect()) for system, table in tables.items()}
        fns["pylance"] = pylance_query
        medians = timed_in_turns(fns, runs=args.runs, warmup=3)
        base = medians["parquet"]
        rows.append([name] + [f"{medians[s] * 1000:.1f} ms ({medians[s] / base:.2f}x)" for s in fns])
        print(name, {s: round(t, 4) for s, t in medians.items()}, flush=True)
    print_table(f"point lookups, {args.rows} rows in {args.fragments} fragments (ratio: / parquet)",
                ["query"] + list(fns), rows)


if __name__ == "__main__":
    main()
