package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.Row
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance
import sparklance.format.table.Dataset

/** Generated columns: kept in the Lance field metadata, computed where a write leaves them out, refused when given another value. */
class GeneratedColumnsSuite extends AnyFunSuite with LocalSpark {
  override def beforeAll(): Unit = { super.beforeAll(); sql("CREATE NAMESPACE IF NOT EXISTS lance.gen") }

  private def catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
  private def dataset(table: String): Dataset = new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("gen"), table)))
  private def rows(q: String) = sql(q).collect().toSeq
  private def condition(e: Throwable): Option[String] = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
    .collectFirst { case s: org.apache.spark.SparkThrowable if s.getCondition != null => s.getCondition }

  test("computed by INSERT with a column list, positional INSERT of NULL and DataFrame appends; another value is refused") {
    val t = "lance.gen.events"
    sql(s"CREATE TABLE $t (id BIGINT NOT NULL, ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), " +
      "tag STRING, up STRING GENERATED ALWAYS AS (upper(tag)))")
    val column = catalog.loadTable(Identifier.of(Array("gen"), "events")).columns().find(_.name() == "d").get
    assert(column.generationExpression() == "CAST(ts AS DATE)")
    assert(dataset("events").snapshot().schema.fields.find(_.name == "d").get.metadata ==
      Map(GeneratedColumns.LanceKey -> "CAST(ts AS DATE)"))
    sql(s"INSERT INTO $t (id, ts, tag) VALUES (1, TIMESTAMP'2026-03-01 10:00:00', 'a')")
    sql(s"INSERT INTO $t VALUES (2, TIMESTAMP'2026-03-02 23:59:59', NULL, 'b', NULL)")
    sql(s"INSERT INTO $t VALUES (3, TIMESTAMP'2026-03-03 00:00:00', DATE'2026-03-03', 'c', 'C')")
    spark.sql("SELECT 4L AS id, TIMESTAMP'2026-03-04 12:00:00' AS ts, 'd' AS tag").writeTo(t).append()
    assert(rows(s"SELECT id, CAST(d AS STRING), up FROM $t ORDER BY id") == Seq(
      Row(1L, "2026-03-01", "A"), Row(2L, "2026-03-02", "B"), Row(3L, "2026-03-03", "C"), Row(4L, "2026-03-04", "D")))
    val version = dataset("events").latestVersion
    val e = intercept[Exception](sql(s"INSERT INTO $t VALUES (5, TIMESTAMP'2026-03-05 00:00:00', DATE'2020-01-01', 'e', 'E')"))
    assert(condition(e).contains("CHECK_CONSTRAINT_VIOLATION") && e.getMessage.contains("generated_d"), e)
    // An UPDATE of the source column sets the generated one; giving it another value is refused.
    sql(s"UPDATE $t SET ts = TIMESTAMP'2027-01-01 00:00:00' WHERE id = 1")
    val u = intercept[Exception](sql(s"UPDATE $t SET ts = TIMESTAMP'2028-01-01 00:00:00', d = DATE'2000-01-01' WHERE id = 2"))
    assert(condition(u).contains("CHECK_CONSTRAINT_VIOLATION"), u)
    // An insert-only MERGE is an append (Spark plans it as one): computed. A MERGE that updates rows
    // gives the value itself: an update of the source column alone is refused by the check.
    sql("CREATE OR REPLACE TEMPORARY VIEW src AS SELECT 9L AS id, TIMESTAMP'2026-05-05 05:05:05' AS ts, 'm' AS tag")
    sql(s"MERGE INTO $t t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, ts, tag) VALUES (s.id, s.ts, s.tag)")
    assert(rows(s"SELECT CAST(d AS STRING), up FROM $t WHERE id = 9") == Seq(Row("2026-05-05", "M")))
    val m = intercept[Exception](sql(s"MERGE INTO $t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = s.ts + INTERVAL 2 DAYS"))
    assert(condition(m).contains("CHECK_CONSTRAINT_VIOLATION"), m)
    sql(s"MERGE INTO $t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = s.ts + INTERVAL 2 DAYS, d = DATE'2026-05-07'")
    sql(s"DELETE FROM $t WHERE id = 9")
    assert(dataset("events").latestVersion == version + 4)
    // Spark's SHOW CREATE TABLE prints no GENERATED clause for a catalog's table; it prints the column's check.
    assert(rows(s"SHOW CREATE TABLE $t").head.getString(0).contains("CONSTRAINT generated_d CHECK (`d` <=> CAST((CAST(ts AS DATE)) AS DATE))"))

    val script = Files.createTempFile("generated", ".py")
    Files.writeString(script, "import sys, lance\nds = lance.dataset(sys.argv[1])\nt = ds.to_table().sort_by('id')\n" +
      "print([str(v) for v in t.column('d').to_pylist()], ds.schema.field('d').metadata[b'spark.generation_expression'].decode())\n")
    assert(Pylance.run(script, dataset("events").path).trim.linesIterator.toSeq.last ==
      "['2027-01-01', '2026-03-02', '2026-03-03', '2026-03-04'] CAST(ts AS DATE)")
  }

  private def splitsRead(df: org.apache.spark.sql.DataFrame): Long = {
    df.collect()
    df.queryExecution.executedPlan.collect {
      case s: org.apache.spark.sql.execution.datasources.v2.BatchScanExec => s.metrics("splitsRead").value
    }.sum
  }

  test("a filter on the timestamp a generated DATE column casts skips fragments by the zone maps of the date") {
    val t = "lance.gen.days"
    sql(s"CREATE TABLE $t (id BIGINT, ts TIMESTAMP, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), " +
      "n TIMESTAMP_NTZ, nd DATE GENERATED ALWAYS AS (CAST(n AS DATE))) " +
      // Zone maps on the dates only: the timestamps' own zone maps cannot skip anything here.
      "TBLPROPERTIES ('zonemap_columns' = 'd, nd')")
    // One fragment per day.
    for (day <- 1 to 6) sql(s"INSERT INTO $t (id, ts, n) SELECT id, TIMESTAMP'2026-03-0$day 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id), " +
      s"TIMESTAMP_NTZ'2026-03-0$day 12:00:00' FROM range(100)")
    val all = splitsRead(sql(s"SELECT * FROM $t"))
    assert(all == 6)
    for ((filter, expected, most) <- Seq(("ts >= TIMESTAMP'2026-03-05 00:00:30'", 170L, 3L),
        ("TIMESTAMP'2026-03-02 00:00:00' > ts", 100L, 3L), ("n = TIMESTAMP_NTZ'2026-03-04 12:00:00'", 100L, 1L),
        ("n < TIMESTAMP_NTZ'2026-03-03 00:00:00'", 200L, 3L))) {
      val df = sql(s"SELECT * FROM $t WHERE $filter")
      assert(df.count() == expected, filter)
      val read = splitsRead(sql(s"SELECT * FROM $t WHERE $filter"))
      assert(read <= most, s"$filter read $read of $all fragments")
    }
  }
}
