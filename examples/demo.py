"""The sparklance demo: a local Spark session on an embedded warehouse creates lance.db.people
(with stable row ids), inserts rows, merges, updates and deletes, shows the result, its row
lineage, change data and history, and reads the same table back with pylance."""
import shutil
import sys
import tempfile
from pathlib import Path

import lance
from pyspark.sql import SparkSession

import sparklance


def main(warehouse: Path) -> None:
    spark = (sparklance.configure(SparkSession.builder.master("local[2]").appName("sparklance-demo"),
                                  warehouse=str(warehouse))
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("DROP TABLE IF EXISTS lance.db.people PURGE")
    spark.sql("""
        CREATE TABLE lance.db.people (
            id BIGINT NOT NULL, name STRING, age INT, score DOUBLE, joined DATE, active BOOLEAN)
        TBLPROPERTIES ('enable_stable_row_ids' = 'true')""")
    spark.sql("""
        INSERT INTO lance.db.people VALUES
            (1, 'Ada', 36, 91.5, DATE'2021-03-01', true),
            (2, 'Grace', 45, 88.0, DATE'2020-07-15', true),
            (3, 'Linus', NULL, 73.25, DATE'2022-01-09', false),
            (4, 'Margaret', 33, NULL, DATE'2023-11-30', true)""")
    spark.range(5, 1005).selectExpr(
        "id", "concat('user_', id) AS name", "CAST(20 + id % 50 AS INT) AS age",
        "id * 0.5 AS score", "date_add(DATE'2024-01-01', CAST(id AS INT)) AS joined",
        "id % 3 = 0 AS active").writeTo("lance.db.people").append()

    spark.createDataFrame(
        [(2, "Grace Hopper", 46, 90.0), (4, "Margaret Hamilton", 34, 97.5), (2001, "Barbara", 29, 81.0)],
        "id BIGINT, name STRING, age INT, score DOUBLE").createOrReplaceTempView("updates")
    print("== MERGE INTO lance.db.people USING updates (2 matched rows updated, 1 inserted)")
    spark.sql("""
        MERGE INTO lance.db.people t USING updates s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET name = s.name, age = s.age, score = s.score
        WHEN NOT MATCHED THEN INSERT (id, name, age, score, joined, active)
                              VALUES (s.id, s.name, s.age, s.score, current_date(), true)""")
    print("== UPDATE: people without an age get 0; DELETE: inactive users")
    spark.sql("UPDATE lance.db.people SET age = 0 WHERE age IS NULL")
    spark.sql("DELETE FROM lance.db.people WHERE NOT active AND id > 4")

    print("== Spark: SELECT * FROM lance.db.people ORDER BY id LIMIT 6")
    spark.sql("SELECT * FROM lance.db.people ORDER BY id LIMIT 6").show()
    print("== Spark: aggregate over all rows")
    spark.sql("""SELECT count(*) AS people, round(avg(age), 2) AS avg_age, sum(CAST(active AS INT)) AS active
                 FROM lance.db.people""").show()
    spark.sql("SHOW TABLES IN lance.db").show()
    print("== Row lineage: updated rows keep their _rowid and created-at version")
    spark.sql("""SELECT id, name, _rowid, _row_created_at_version, _row_last_updated_at_version
                 FROM lance.db.people WHERE id IN (1, 2, 4, 2001) ORDER BY id""").show()
    print("== Change data of the MERGE and the UPDATE (versions 4 and 5), updates as pre/post images")
    sparklance.changes(spark, "lance.db.people", 4, 5).orderBy("_commit_version", "id", "_change_type") \
        .select("id", "name", "age", "_rowid", "_change_type", "_commit_version").show()
    print("== History: SELECT * FROM lance.db.people.history")
    sparklance.history(spark, "lance.db.people").show(truncate=False)

    path = warehouse / "db" / "people.lance"
    ds = lance.dataset(str(path))
    table = ds.to_table()
    print(f"== pylance {lance.__version__}: {path}")
    print(f"version {ds.version}, file format {ds.data_storage_version}, {table.num_rows} rows, "
          f"{len(ds.get_fragments())} fragments, "
          f"{ds.count_rows()} live rows by count")
    for v in ds.versions():
        print(f"  version {v['version']}: {v['timestamp']}")
    print(table.sort_by("id").slice(0, 6).to_pandas().to_string(index=False))
    lineage = ds.to_table(columns=["id", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"])
    spark_lineage = sorted(tuple(r) for r in spark.sql(
        "SELECT id, _rowid, _row_created_at_version, _row_last_updated_at_version FROM lance.db.people").collect())
    assert sorted(zip(*(lineage.column(i).to_pylist() for i in range(4)))) == spark_lineage, "lineage differs"
    print("pylance reads the same row ids and row versions as Spark")
    spark_rows = spark.table("lance.db.people").count()
    assert table.num_rows == spark_rows, f"pylance read {table.num_rows} rows, Spark {spark_rows}"
    print("pylance and Spark agree on", spark_rows, "rows")
    vector_search(spark, warehouse)
    spark.stop()


def vector_search(spark, warehouse: Path) -> None:
    """A vector column, an IVF_PQ index built by Spark, and a nearest-neighbour search that pylance answers alike."""
    import numpy as np
    print("== Vector search: 2,000 embeddings of 16 dimensions, an IVF_PQ index, the 3 rows nearest a query")
    spark.sql("DROP TABLE IF EXISTS lance.db.docs PURGE")
    spark.sql("CREATE TABLE lance.db.docs (id BIGINT, topic INT, emb ARRAY<FLOAT>) "
              "TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '16')")
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((8, 16))
    vectors = (centers[np.arange(2000) % 8] + 0.1 * rng.standard_normal((2000, 16))).astype(np.float32)
    spark.createDataFrame([(i, i % 8, vectors[i].tolist()) for i in range(2000)], "id BIGINT, topic INT, emb ARRAY<FLOAT>") \
        .writeTo("lance.db.docs").append()
    spark.sql("CALL lance.system.create_index(table => 'db.docs', column => 'emb', index_type => 'IVF_PQ', "
              "num_partitions => 8, num_sub_vectors => 4)").show()
    query = vectors[42] + 0.01
    literal = "array(" + ", ".join(f"{v}f" for v in query.tolist()) + ")"
    found = spark.sql(f"SELECT id, topic, _distance FROM vector_search(table => 'lance.db.docs', vector_column => 'emb', "
                      f"query_vector => {literal}, k => 3, nprobes => 2, refine_factor => 4)")
    found.show()
    theirs = lance.dataset(str(warehouse / "db" / "docs.lance")).to_table(
        columns=["id"], nearest={"column": "emb", "q": query, "k": 3, "nprobes": 2, "refine_factor": 4})
    assert [r.id for r in found.collect()] == theirs.column("id").to_pylist(), "pylance found other rows"
    print("pylance's nearest on the index Spark built finds the same rows")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]).resolve())
    else:
        tmp = Path(tempfile.mkdtemp(prefix="sparklance-demo-"))
        try:
            main(tmp / "warehouse")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
