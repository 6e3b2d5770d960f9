package sparklance.spark.scan

import java.nio.file.{Files, Path}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.io.LocalStorage
import sparklance.spark.{GatedFileSystem, LanceSparkSessionExtensions, TestFileSystemCatalog}

/**
 * On an object store a task opens its next split while the one before it opens and is read
 * ([[LanceColumnarReader]]): one task reading every split of a table of several fragments has two
 * of their data files open at once; it reads every row once, stops early under a LIMIT, and
 * reports a split that fails to open as the error of that split.
 */
class SplitLookAheadSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val root: Path = Files.createTempDirectory("look-ahead")
  private lazy val spark = TestFileSystemCatalog.builder("look-ahead", "lance", "gated", classOf[GatedFileSystem], root)
    .config("spark.sql.extensions", classOf[LanceSparkSessionExtensions].getName)
    // Every split of a scan in one task.
    .config("spark.sql.files.maxPartitionNum", "1")
    .getOrCreate()

  override def afterAll(): Unit = try spark.stop() finally try LocalStorage.deleteRecursively(root.toString) finally super.afterAll()

  /** `body`'s result, and the data files it opened through the gate. */
  private def gated[T](body: => T): (T, Set[String]) = {
    GatedFileSystem.arm()
    val result = try body catch { case e: Throwable => GatedFileSystem.disarm(); throw e }
    (result, GatedFileSystem.disarm())
  }

  test("one task reads its splits with the next one opening beside it, every row once, and stops at a limit") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("CREATE TABLE lance.db.t TBLPROPERTIES ('max_rows_per_file' = '3000') AS " +
      "SELECT id, concat('s', id) AS s FROM range(10000)")
    spark.sql("DELETE FROM lance.db.t WHERE id % 7 = 3")
    val expected = spark.range(10000).where("id % 7 != 3").selectExpr("count(*)", "sum(id)", "max(concat('s', id))").collect().head
    val (got, opened) = gated(spark.sql("SELECT count(*), sum(id), max(s) FROM lance.db.t").collect().head)
    assert(got == expected)
    assert(opened.size == 4, opened)
    // A limit met by the first split: the next one, opened beside it, is closed unread.
    assert(spark.sql("SELECT id FROM lance.db.t LIMIT 5").collect().length == 5)
  }

  test("a split that fails to open fails the scan when the task reaches it, naming the missing file") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    spark.sql("CREATE TABLE lance.db.gone TBLPROPERTIES ('max_rows_per_file' = '3000') AS SELECT id FROM range(9000)")
    val data = root.resolve("wh/db/gone.lance/data")
    val files = Using.resource(Files.list(data))(_.iterator.asScala.filter(_.toString.endsWith(".lance")).toSeq)
    assert(files.length > 2)
    val lost = files.sortBy(f => Files.getLastModifiedTime(f).toMillis).last
    Files.delete(lost)
    val e = intercept[Exception](spark.sql("SELECT sum(id) FROM lance.db.gone").collect())
    val chain = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" <- ")
    assert(chain.contains(lost.getFileName.toString), chain)
  }
}
