package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.columnar.InMemoryRelation
import org.apache.spark.sql.functions.{expr, lit, udf}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.CommitConflictException

/**
 * Serializable isolation, decided by what a statement read: each statement here stops inside its
 * job at a gate (a UDF Spark cannot push into the scan) after it has read the table, another
 * statement commits meanwhile, then the gate opens and the first one commits. It must fail
 * exactly when the rows committed meanwhile could have been returned by its scans.
 */
class SerializableIsolationSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[4]").appName("serializable-isolation")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.catalog.lance", classOf[LanceCatalog].getName)
    .config("spark.sql.catalog.lance.warehouse", Files.createTempDirectory("serializable-wh").toString)
    .getOrCreate()
  private var counter = 0

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.udf.register("gate", udf((_: Long) => { Gate.pass(); true }))
    spark.sql("CREATE NAMESPACE lance.iso")
  }

  override def afterAll(): Unit = try spark.stop() finally super.afterAll()

  /** A table of 20 rows, ids 0..19, region 'eu' for even ids and 'us' for odd ones. */
  private def table(isolation: String = "serializable"): String = {
    counter += 1
    val name = s"lance.iso.t$counter"
    spark.sql(s"CREATE TABLE $name (id BIGINT NOT NULL, region STRING, v INT) TBLPROPERTIES ('isolation_level' = '$isolation')")
    spark.sql(s"INSERT INTO $name SELECT /*+ COALESCE(1) */ id, IF(id % 2 = 0, 'eu', 'us'), 0 FROM range(20)")
    name
  }

  /** Runs `statement` until its gate, commits `meanwhile`, opens the gate: None if it landed, else the conflict's message. */
  private def interleaved(statement: String, meanwhile: String): Option[String] = Interleaving.run(spark, statement, meanwhile)

  /** The same for a statement of the DataFrame API, `what` naming it. */
  private def interleaved(what: String, statement: => Any, meanwhile: String): Option[String] =
    Interleaving.run(spark, what, statement, meanwhile)

  private def count(t: String, where: String) = spark.sql(s"SELECT count(*) FROM $t WHERE $where").first().getLong(0)

  test("a DELETE fails over a concurrent insert its condition matches, and lands over one it cannot") {
    val t = table()
    assert(interleaved(s"DELETE FROM $t WHERE region = 'eu' AND gate(id)", s"INSERT INTO $t VALUES (100, 'us', 0)").isEmpty)
    assert(count(t, "region = 'eu'") == 0 && count(t, "region = 'us'") == 11)

    val u = table()
    val conflict = interleaved(s"DELETE FROM $u WHERE region = 'eu' AND gate(id)", s"INSERT INTO $u VALUES (100, 'eu', 0)")
    assert(conflict.exists(m => m.contains("Append") && m.contains("serializable") && m.contains("never saw")), conflict)
    assert(count(u, "region = 'eu'") == 11, "the DELETE left the table as the insert left it")
  }

  test("an UPDATE fails over a concurrent UPDATE whose rewritten rows its condition matches") {
    val t = table()
    // The concurrent UPDATE moves row 1 into 'eu'; ours would have set its v too.
    val conflict = interleaved(s"UPDATE $t SET v = 1 WHERE region = 'eu' AND gate(id)", s"UPDATE $t SET region = 'eu' WHERE id = 1")
    assert(conflict.exists(_.contains("Update")), conflict)
    // One that rewrites only rows of the other region passes.
    val u = table()
    assert(interleaved(s"UPDATE $u SET v = 1 WHERE region = 'eu' AND gate(id)", s"UPDATE $u SET v = 7 WHERE id = 1").isEmpty)
    assert(count(u, "v = 1") == 10 && count(u, "v = 7") == 1)
  }

  test("a MERGE whose ON clause constrains the target passes concurrent inserts of other rows") {
    val merge = (t: String, region: String) => s"MERGE INTO $t t USING (SELECT id, 5 AS v FROM range(18, 24, 1, 1) WHERE gate(id)) s " +
      s"ON t.id = s.id AND t.region = '$region' WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, region, v) VALUES (s.id, '$region', s.v)"
    val t = table()
    assert(interleaved(merge(t, "eu"), s"INSERT INTO $t VALUES (22, 'us', 0)").isEmpty)
    val u = table()
    val conflict = interleaved(merge(u, "eu"), s"INSERT INTO $u VALUES (22, 'eu', 0)")
    assert(conflict.exists(_.contains("never saw")), conflict)
    assert(count(u, "id = 22") == 1)
  }

  test("an insert-only MERGE and an INSERT ... SELECT from the table itself are checked too; a plain INSERT is not") {
    val t = table()
    val insertOnly = s"MERGE INTO $t t USING (SELECT 50L AS id, 'eu' AS region, 1 AS v FROM range(1) WHERE gate(id)) s " +
      "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    assert(interleaved(insertOnly, s"INSERT INTO $t VALUES (50, 'eu', 2)").exists(_.contains("never saw")))
    assert(count(t, "id = 50") == 1)

    val copy = s"INSERT INTO $t SELECT id + 1000, region, v FROM $t WHERE region = 'us' AND gate(id)"
    assert(interleaved(copy, s"INSERT INTO $t VALUES (60, 'eu', 0)").isEmpty, "a row it could not have selected")
    assert(interleaved(copy, s"INSERT INTO $t VALUES (61, 'us', 0)").exists(_.contains("never saw")))

    val blind = s"INSERT INTO $t SELECT id + 5000, 'eu', 0 FROM range(0, 3, 1, 1) WHERE gate(id)"
    assert(interleaved(blind, s"INSERT INTO $t VALUES (62, 'eu', 0)").isEmpty)
  }

  test("INSERT OVERWRITE ... SELECT from the table itself fails over rows it would have selected") {
    val t = table()
    val keepUs = s"INSERT OVERWRITE $t SELECT id, region, v FROM $t WHERE region = 'us' AND gate(id)"
    assert(interleaved(keepUs, s"INSERT INTO $t VALUES (61, 'us', 0)").exists(_.contains("never saw")))
    assert(count(t, "true") == 21)
    // A row it would not have selected: in serial order (insert, then overwrite) the row is gone.
    assert(interleaved(keepUs, s"INSERT INTO $t VALUES (60, 'eu', 0)").isEmpty)
    assert(count(t, "region = 'us'") == 11 && count(t, "region = 'eu'") == 0)
  }

  test("what a statement read is found by the table it names, in cached plans and DataFrames too") {
    // Each statement here reads the table through an object of its own: a DataFrame analysed
    // before, or the cached rows of one, never the object Spark hands the write.
    val t = table()
    val cached = spark.table(t).where("region = 'us'")
    cached.cache().count()
    val keepUs = cached.where(expr("gate(id)"))
    assert(keepUs.queryExecution.optimizedPlan.collectFirst { case m: InMemoryRelation => m }.isDefined)
    assert(interleaved("overwrite with cached rows", keepUs.writeTo(t).overwrite(lit(true)), s"INSERT INTO $t VALUES (61, 'us', 0)")
      .exists(_.contains("never saw")))
    assert(count(t, "id = 61") == 1 && count(t, "true") == 21)
    cached.unpersist()

    // A DataFrame read an older version than the one its write lands on: rows committed since
    // were never seen by it.
    val u = table()
    // It reads the 'us' rows and writes 'eu' rows, which its reads cannot return.
    val us = spark.table(u).where("region = 'us'").selectExpr("id + 1000 AS id", "'eu' AS region", "v")
    spark.sql(s"INSERT INTO $u VALUES (60, 'eu', 0)")
    us.writeTo(u).append()
    assert(count(u, "id >= 1000") == 10)
    spark.sql(s"INSERT INTO $u VALUES (61, 'us', 0)")
    val stale = intercept[Exception](us.writeTo(u).append())
    assert(Iterator.iterate[Throwable](stale)(_.getCause).takeWhile(_ != null).exists(_.isInstanceOf[CommitConflictException]), stale)
    assert(count(u, "id >= 1000") == 10 && count(u, "id = 61") == 1)
  }

  test("statements on one session read apart: what one read never counts for another") {
    val t = table()
    // Ours reads the 'us' rows and holds on its thread; meanwhile a statement on another thread
    // reads the 'eu' rows and commits 'eu' rows, which ours could not have read: both land.
    val ours = s"INSERT INTO $t SELECT id + 1000, region, v FROM $t WHERE region = 'us' AND gate(id)"
    assert(interleaved(ours, s"INSERT INTO $t SELECT id + 2000, region, v FROM $t WHERE region = 'eu'").isEmpty)
    assert(count(t, "id >= 2000") == 10 && count(t, "id >= 1000 AND id < 2000") == 10)
  }

  test("under snapshot isolation the same interleavings land, and two inserts of one key both stay") {
    val t = table("snapshot")
    val insertOnly = s"MERGE INTO $t t USING (SELECT 50L AS id, 'eu' AS region, 1 AS v FROM range(1) WHERE gate(id)) s " +
      "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    assert(interleaved(insertOnly, s"INSERT INTO $t VALUES (50, 'eu', 2)").isEmpty)
    assert(count(t, "id = 50") == 2)
    assert(interleaved(s"DELETE FROM $t WHERE region = 'eu' AND gate(id)", s"INSERT INTO $t VALUES (100, 'eu', 0)").isEmpty)
    assert(count(t, "region = 'eu'") == 1)
  }
}
