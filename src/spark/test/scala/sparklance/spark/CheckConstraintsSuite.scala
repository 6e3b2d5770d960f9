package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.connector.catalog.constraints.Check
import org.apache.spark.sql.functions.udf
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.Pylance
import sparklance.format.table.Dataset

/** CHECK constraints: kept in the table config, checked against the rows when added, enforced on every write. */
class CheckConstraintsSuite extends AnyFunSuite with LocalSpark {
  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.udf.register("gate", udf((_: Long) => { Gate.pass(); true }))
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ck")
  }

  private def catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
  private def dataset(table: String): Dataset = new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("ck"), table)))
  private def rows(q: String) = sql(q).collect().toSeq
  private def checks(table: String): Seq[String] =
    catalog.loadTable(Identifier.of(Array("ck"), table)).constraints().toSeq.map(_.toDDL)
  private def causes(e: Throwable) = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toSeq
  private def condition(e: Throwable): Option[String] =
    causes(e).collectFirst { case s: org.apache.spark.SparkThrowable if s.getCondition != null => s.getCondition }

  /** A table `name` (id, v) holding ids 1..3 with v = 10 * id. */
  private def table(name: String, constraint: String = ""): String = {
    val t = s"lance.ck.$name"
    sql(s"CREATE TABLE $t (id BIGINT NOT NULL, v INT$constraint)")
    sql(s"INSERT INTO $t VALUES (1, 10), (2, 20), (3, 30)")
    t
  }

  /** `statement` fails with Spark's CHECK_CONSTRAINT_VIOLATION naming `constraint`, and the table keeps its version. */
  private def refused(t: String, name: String, constraint: String)(statement: => Any): Unit = {
    val version = dataset(name).latestVersion
    val e = intercept[Exception](statement)
    assert(condition(e).contains("CHECK_CONSTRAINT_VIOLATION") && e.getMessage.contains(constraint), e)
    assert(dataset(name).latestVersion == version, s"nothing committed: $t")
  }

  test("CREATE TABLE with a CHECK constraint keeps it in the config; every kind of write is checked") {
    val t = table("w", ", CONSTRAINT positive CHECK (v > 0)")
    assert(checks("w") == Seq("CONSTRAINT positive CHECK (v > 0) ENFORCED NORELY"))
    assert(dataset("w").snapshot().config("sparklance.constraint.positive") == """{"check":"v > 0","rely":false}""")
    refused(t, "w", "positive")(sql(s"INSERT INTO $t VALUES (4, -1)"))
    refused(t, "w", "positive")(spark.range(5, 8).selectExpr("id", "CAST(id - 6 AS INT) AS v").writeTo(t).append())
    refused(t, "w", "positive")(sql(s"UPDATE $t SET v = v - 25 WHERE id >= 2"))
    sql("CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM VALUES (1L, -5), (9L, 9) AS s(id, v)")
    refused(t, "w", "positive")(sql(s"MERGE INTO $t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v " +
      "WHEN NOT MATCHED THEN INSERT *"))
    refused(t, "w", "positive")(sql(s"MERGE INTO $t t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, -s.v)"))
    refused(t, "w", "positive")(sql(s"INSERT OVERWRITE $t VALUES (1, 0)"))
    // By path, as the data source writes it.
    refused(t, "w", "positive")(spark.range(1).selectExpr("10L AS id", "-1 AS v").write.format("lance").mode("append")
      .save(dataset("w").path))
    // NULL passes, as in SQL; rows that hold pass.
    sql(s"INSERT INTO $t VALUES (4, NULL), (5, 50)")
    sql(s"UPDATE $t SET v = v + 1 WHERE id = 1")
    assert(rows(s"SELECT id, v FROM $t ORDER BY id") == Seq(Row(1L, 11), Row(2L, 20), Row(3L, 30), Row(4L, null), Row(5L, 50)))
  }

  test("ADD CONSTRAINT counts the violating rows and refuses, naming the constraint; DROP CONSTRAINT removes it") {
    val t = table("a")
    sql(s"INSERT INTO $t VALUES (4, -1), (5, -2)")
    val version = dataset("a").latestVersion
    val e = intercept[Exception](sql(s"ALTER TABLE $t ADD CONSTRAINT nonneg CHECK (v >= 0)"))
    assert(condition(e).contains("LANCE_CHECK_CONSTRAINT_VIOLATED"), e)
    assert(e.getMessage.contains("nonneg") && e.getMessage.contains("2 row(s) of version 3"), e.getMessage)
    assert(dataset("a").latestVersion == version && checks("a").isEmpty)

    sql(s"DELETE FROM $t WHERE v < 0")
    sql(s"ALTER TABLE $t ADD CONSTRAINT nonneg CHECK (v >= 0)")
    assert(checks("a") == Seq("CONSTRAINT nonneg CHECK (v >= 0) ENFORCED NORELY"))
    val taken = intercept[AnalysisException](sql(s"ALTER TABLE $t ADD CONSTRAINT NONNEG CHECK (v < 100)"))
    assert(taken.getCondition == "CONSTRAINT_ALREADY_EXISTS", taken)
    refused(t, "a", "nonneg")(sql(s"INSERT INTO $t VALUES (6, -6)"))
    // A column a constraint names is neither dropped nor renamed.
    val drop = intercept[Exception](sql(s"ALTER TABLE $t DROP COLUMN v"))
    assert(condition(drop).contains("LANCE_SCHEMA_CHANGE_REFUSED") && drop.getMessage.contains("nonneg"), drop)
    val rename = intercept[Exception](sql(s"ALTER TABLE $t RENAME COLUMN v TO w"))
    assert(condition(rename).contains("LANCE_SCHEMA_CHANGE_REFUSED"), rename)

    sql(s"ALTER TABLE $t DROP CONSTRAINT nonneg")
    assert(checks("a").isEmpty && !dataset("a").snapshot().config.keys.exists(_.startsWith("sparklance.constraint.")))
    sql(s"INSERT INTO $t VALUES (6, -6)")
    val missing = intercept[AnalysisException](sql(s"ALTER TABLE $t DROP CONSTRAINT nonneg"))
    assert(missing.getCondition == "CONSTRAINT_DOES_NOT_EXIST", missing)
    sql(s"ALTER TABLE $t DROP CONSTRAINT IF EXISTS nonneg")
    val history = rows(s"SELECT operation_parameters['statement'] FROM $t.history ORDER BY version").map(_.getString(0))
    assert(history.contains("ADD CONSTRAINT") && history.contains("DROP CONSTRAINT"), history)
  }

  test("pylance's append, delete and compaction keep the constraints; its appends are not checked") {
    val t = table("py", ", CONSTRAINT positive CHECK (v > 0)")
    val script = Files.createTempFile("constraints", ".py")
    Files.writeString(script,
      """import sys, lance, pyarrow as pa
        |path = sys.argv[1]
        |lance.write_dataset(pa.table({"id": pa.array([7], pa.int64()), "v": pa.array([-7], pa.int32())},
        |    schema=lance.dataset(path).schema), path, mode="append")
        |ds = lance.dataset(path)
        |ds.delete("id = 1")
        |ds.optimize.compact_files()
        |ds = lance.dataset(path)
        |print(ds.version, ds.config().get("sparklance.constraint.positive"))
        |""".stripMargin)
    val out = Pylance.run(script, dataset("py").path).trim.linesIterator.toSeq.last
    assert(out.endsWith("""{"check":"v > 0","rely":false}"""), out)
    assert(checks("py") == Seq("CONSTRAINT positive CHECK (v > 0) ENFORCED NORELY"))
    // pylance wrote a violating row; Spark's writes are still checked.
    assert(rows(s"SELECT count(*) FROM $t WHERE v < 0") == Seq(Row(1L)))
    refused(t, "py", "positive")(sql(s"INSERT INTO $t VALUES (8, -8)"))
  }

  test("a write planned before ADD CONSTRAINT cannot commit after it: it retries as a commit conflict") {
    val t = table("before")
    val conflict = Interleaving.run(spark, s"INSERT INTO $t SELECT id + 10, -1 FROM range(1) WHERE gate(id)",
      s"ALTER TABLE $t ADD CONSTRAINT nonneg CHECK (v >= 0)")
    assert(conflict.exists(m => m.contains("nonneg") && m.contains("not checked against")), conflict)
    assert(rows(s"SELECT count(*) FROM $t WHERE v < 0") == Seq(Row(0L)))
    // Run again, the statement is checked by Spark.
    refused(t, "before", "nonneg")(sql(s"INSERT INTO $t SELECT id + 10, -1 FROM range(1)"))
  }

  test("ADD CONSTRAINT over rows a concurrent writer committed after the version it counted: refused naming them") {
    val t = table("after")
    // The count holds at its gate while the violating row lands; the commit then checks the new rows.
    val e = intercept[Exception](Interleaving.run(spark, s"ALTER TABLE $t ADD CONSTRAINT nonneg CHECK (gate(id) AND v >= 0)",
      s"INSERT INTO $t VALUES (9, -9)"))
    assert(condition(e).contains("LANCE_CHECK_CONSTRAINT_VIOLATED") && e.getMessage.contains("1 row(s)"), e)
    assert(checks("after").isEmpty && rows(s"SELECT count(*) FROM $t WHERE v < 0") == Seq(Row(1L)))
  }

  test("a racing writer of violating rows and ADD CONSTRAINT: never a constraint over a violating row") {
    val rounds = 6
    val outcomes = (1 to rounds).map { round =>
      val t = table(s"race$round")
      // The violating row comes at another point of the writer's run each round.
      val writer = new Thread(() => (1 to 4).foreach { i =>
        try sql(s"INSERT INTO $t VALUES (${100 + i}, ${if (i == 1 + round % 4) -1 else 1})") catch { case _: Exception => }
      })
      writer.start()
      val added = try { sql(s"ALTER TABLE $t ADD CONSTRAINT nonneg CHECK (v >= 0)"); "added" }
        catch { case e: Exception => condition(e).getOrElse(throw e) }
      writer.join(120000)
      val violating = rows(s"SELECT count(*) FROM $t WHERE v < 0").head.getLong(0)
      assert(checks(s"race$round").isEmpty || violating == 0, s"round $round: constraint $added over $violating violating row(s)")
      added
    }
    info(s"outcomes: ${outcomes.groupBy(identity).view.mapValues(_.size).toMap}")
  }

  test("streaming writes into a table with constraints, and update_columns of a constrained column, are refused") {
    val t = table("st", ", CONSTRAINT positive CHECK (v > 0)")
    val input = Files.createTempDirectory(warehouse, "input")
    Files.writeString(input.resolve("part-0001.json"), """{"id":7,"v":-7}""")
    val stream = spark.readStream.schema("id BIGINT, v INT").json(input.toString).writeStream
      .option("checkpointLocation", Files.createTempDirectory(warehouse, "cp").toString).trigger(Trigger.AvailableNow())
    val e = intercept[Exception] { val q = stream.toTable(t); q.awaitTermination() }
    assert(e.getMessage.contains("positive"), e)
    assert(rows(s"SELECT count(*) FROM $t WHERE v < 0") == Seq(Row(0L)))
    val call = intercept[Exception](sql(s"CALL lance.system.update_columns(table => 'ck.st', expressions => map('v', '-v'))"))
    assert(call.getMessage.contains("positive"), call)
  }
}
