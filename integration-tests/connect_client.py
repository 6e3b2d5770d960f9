"""The Spark Connect client of test_spark_connect.py: `connect_client.py URL SCENARIO` runs one
scenario against the server at URL and prints what it saw as JSON.

It runs in a process of its own because PySpark refuses a Connect session in a process that has a
classic one, as the test process does (and then treats every later session of it as Connect).
"""
import json
import sys
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql.functions import expr

import sparklance


def rows(df):
    return [[v.isoformat() if isinstance(v, datetime) else v for v in r] for r in df.collect()]


def people(spark):
    """The README quickstart's statements, a MERGE in SQL and one through DataFrame.mergeInto."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("CREATE TABLE lance.db.people (id BIGINT NOT NULL, name STRING, age INT)")
    spark.sql("INSERT INTO lance.db.people VALUES (1, 'Ada', 36), (2, 'Grace', 45)")
    spark.range(3, 100).selectExpr("id", "concat('user_', id) AS name", "CAST(id % 80 AS INT) AS age") \
         .writeTo("lance.db.people").append()
    over_40 = [r.id for r in spark.table("lance.db.people").where("age > 40").orderBy("id").collect()]
    spark.sql("""MERGE INTO lance.db.people t
      USING (SELECT * FROM VALUES (1L, 'Ada Lovelace', 37), (500L, 'Edsger', 72) AS s(id, name, age)) s
      ON t.id = s.id
      WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    source = spark.createDataFrame([(2, "Grace Hopper", 46), (600, "Barbara", 68)], "id BIGINT, name STRING, age INT")
    (source.alias("s").mergeInto("lance.db.people", expr("people.id = s.id"))
     .whenMatched().updateAll()
     .whenNotMatched().insertAll()
     .whenNotMatchedBySource(expr("people.id BETWEEN 90 AND 99")).delete()
     .merge())
    return {"over_40": over_40, "rows": rows(spark.table("lance.db.people").orderBy("id"))}


def lineage(spark):
    """sparklance.history and sparklance.changes on a table with stable row ids."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("CREATE TABLE lance.db.users (id BIGINT, name STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    spark.sql("INSERT INTO lance.db.users VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("UPDATE lance.db.users SET name = 'B' WHERE id = 2")
    spark.sql("DELETE FROM lance.db.users WHERE id = 3")
    order = ["_commit_version", "_rowid", "_change_type"]
    return {
        "history": rows(sparklance.history(spark, "lance.db.users").orderBy("version")),
        "changes": rows(sparklance.changes(spark, "lance.db.users", 1).orderBy(order)),
        "split_updates": rows(sparklance.changes(spark, "lance.db.users", 2, 3, compute_updates=False).orderBy(order)),
        "exclusive": rows(sparklance.changes(spark, "lance.db.users", 2, 4, start_inclusive=False,
                                             end_inclusive=False).orderBy(order)),
        "net": rows(sparklance.changes(spark, "lance.db.users", 1, net_changes=True).orderBy(order)),
    }


def properties(spark):
    """Table property errors as a Connect client gets them: the class PySpark raises and its message."""
    from pyspark.errors import PySparkException

    def error(statement):
        try:
            spark.sql(statement).collect()
            return None
        except PySparkException as e:
            return [type(e).__name__, str(e)]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("CREATE TABLE lance.db.props (id BIGINT)")
    typo = error("CREATE TABLE lance.db.typo (id BIGINT) TBLPROPERTIES ('enable_stable_rowids' = 'true')")
    alter = error("ALTER TABLE lance.db.props SET TBLPROPERTIES ('optimize_write' = 'yes')")
    # SET NOT NULL: the server's session extension and the procedure, over Connect.
    spark.sql("CREATE TABLE lance.db.nn (id BIGINT, name STRING)")
    spark.sql("INSERT INTO lance.db.nn VALUES (1, NULL)")
    refused = error("ALTER TABLE lance.db.nn ALTER COLUMN name SET NOT NULL")
    spark.sql("UPDATE lance.db.nn SET name = 'a'")
    spark.sql("ALTER TABLE lance.db.nn ALTER COLUMN name SET NOT NULL")
    sparklance.set_not_null(spark, "lance.db.nn", "id")
    schema = spark.table("lance.db.nn").schema
    return {"typo": typo, "alter": alter, "set_not_null_refused": refused,
            "nullable_after": [schema["id"].nullable, schema["name"].nullable]}


def errors(spark, warehouse):
    """The cases of error_cases.py as a Connect client gets them."""
    import error_cases
    return error_cases.run(spark, warehouse, "connect")


if __name__ == "__main__":
    url, scenario, *more = sys.argv[1:]
    session = SparkSession.builder.remote(url).getOrCreate()
    print(json.dumps({"people": people, "lineage": lineage, "properties": properties, "errors": errors}[scenario](session, *more)))
