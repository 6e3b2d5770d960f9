package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.udf
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance

/**
 * An UPDATE that rewrites columns in place and a DELETE (or another in-place UPDATE) of other rows
 * of the same fragment, committed while it runs: the later commit is rebased (its column file on
 * the other's deletions, or its deletions on the other's column file), as row rewrites are; only
 * statements that changed the same rows, or rewrote columns of one fragment both, conflict.
 */
class InPlaceRebaseSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val warehouse = Files.createTempDirectory("inplace-rebase")
  private lazy val spark = SparkSession.builder().master("local[4]").appName("inplace-rebase")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.catalog.lance", classOf[LanceCatalog].getName)
    .config("spark.sql.catalog.lance.warehouse", warehouse.toString)
    .config("spark.sql.extensions", classOf[LanceSparkSessionExtensions].getName)
    .getOrCreate()
  private var counter = 0

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.udf.register("gate", udf((_: Long) => { Gate.pass(); true }))
    spark.sql("CREATE NAMESPACE lance.ipr")
  }

  override def afterAll(): Unit = try spark.stop() finally super.afterAll()

  /** 300 rows in three fragments of 100; n = id; UPDATEs rewrite columns in place; snapshot isolation. */
  private def table(): String = {
    counter += 1
    val name = s"lance.ipr.t$counter"
    spark.sql(s"CREATE TABLE $name (id BIGINT NOT NULL, n BIGINT, payload STRING) TBLPROPERTIES ('max_rows_per_file' = '100', " +
      "'optimize_write' = 'false', 'rewrite_mode' = 'columns', 'isolation_level' = 'snapshot')")
    spark.sql(s"INSERT INTO $name SELECT /*+ COALESCE(1) */ id, id, repeat('x', 50) FROM range(300)")
    name
  }

  private def interleaved(statement: String, meanwhile: String) = Interleaving.run(spark, statement, meanwhile)

  /** (count, sum of n) as Spark and as pylance read the table; they must agree. */
  private def sums(t: String): (Long, Long) = {
    val row = spark.sql(s"SELECT count(*), sum(n) FROM $t").first()
    val script = Files.createTempFile("ipr", ".py")
    Files.writeString(script, "import sys, lance\nt = lance.dataset(sys.argv[1]).to_table(columns=['n'])\n" +
      "print(t.num_rows, sum(t.column('n').to_pylist()))\n")
    val path = warehouse.resolve(s"ipr/${t.split('.').last}.lance").toString
    assert(Pylance.run(script, path).trim.linesIterator.toSeq.last == s"${row.getLong(0)} ${row.getLong(1)}")
    row.getLong(0) -> row.getLong(1)
  }

  private val all = (0L until 300L).sum

  test("an in-place UPDATE lands over a DELETE of other rows of its fragments, and conflicts over one of its rows") {
    val t = table()
    assert(interleaved(s"UPDATE $t SET n = n + 1000 WHERE id < 100 AND id <> 5 AND gate(id)", s"DELETE FROM $t WHERE id = 5").isEmpty)
    assert(sums(t) == (299L, all - 5 + 99 * 1000))
    val u = table()
    val conflict = interleaved(s"UPDATE $u SET n = n + 1000 WHERE id < 100 AND gate(id)", s"DELETE FROM $u WHERE id = 7")
    assert(conflict.exists(_.contains("both deleted or updated 1 row(s)")), conflict)
    assert(sums(u) == (299L, all - 7))
  }

  test("a DELETE lands over an in-place UPDATE of other rows of its fragments, and conflicts over one of its rows") {
    val t = table()
    assert(interleaved(s"DELETE FROM $t WHERE id IN (5, 150) AND gate(id)", s"UPDATE $t SET n = n + 1000 WHERE id < 100 AND id <> 5").isEmpty)
    assert(sums(t) == (298L, all - 5 - 150 + 99 * 1000))
    val u = table()
    val conflict = interleaved(s"DELETE FROM $u WHERE id = 5 AND gate(id)", s"UPDATE $u SET n = n + 1000 WHERE id < 100")
    assert(conflict.exists(_.contains("both changed 1 row(s)")), conflict)
    assert(sums(u) == (300L, all + 100 * 1000))
  }

  test("two in-place UPDATEs of one fragment conflict, even of other rows") {
    val t = table()
    val conflict = interleaved(s"UPDATE $t SET n = n + 1000 WHERE id < 50 AND gate(id)", s"UPDATE $t SET n = n + 1 WHERE id >= 50 AND id < 100")
    assert(conflict.exists(_.contains("whose columns we also rewrote")), conflict)
    assert(sums(t) == (300L, all + 50))
  }
}
