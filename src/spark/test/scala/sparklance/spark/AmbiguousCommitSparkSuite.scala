package sparklance.spark

import java.nio.file.{Files, Path}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.CommitStateUnknownException
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * A Spark UPDATE whose manifest put writes the manifest and then fails, after which the table
 * cannot be listed: the statement fails with CommitStateUnknownException and neither the
 * committer nor Spark's abort deletes a file, so the version that did land reads completely.
 */
class AmbiguousCommitSparkSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val root: Path = Files.createTempDirectory("ambiguous-spark")
  private lazy val spark = TestFileSystemCatalog.builder("ambiguous-commit", "fl", "faulty", classOf[FaultyFileSystem], root)
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()

  override def afterAll(): Unit = try spark.stop() finally super.afterAll()

  private def files(dir: Path): Set[Path] =
    if (!Files.isDirectory(dir)) Set.empty else Using.resource(Files.list(dir))(_.iterator().asScala.toSet)

  test("an UPDATE whose commit may have landed fails with CommitStateUnknownException and keeps every file") {
    spark.sql("CREATE NAMESPACE fl.db")
    spark.sql("CREATE TABLE fl.db.t (id BIGINT NOT NULL, v INT) TBLPROPERTIES ('max_rows_per_file' = '25')")
    spark.sql("INSERT INTO fl.db.t SELECT /*+ COALESCE(1) */ id, 0 FROM range(100)")
    val table = root.resolve("wh/db/t.lance")
    val dataBefore = files(table.resolve("data"))

    FaultyFileSystem.failNextManifest.set(true)
    FaultyFileSystem.listingsFailingAfter.set(1000)
    val error = try { spark.sql("UPDATE fl.db.t SET v = 1 WHERE id % 10 = 0"); None } catch { case e: Exception => Some(e) }
    FaultyFileSystem.listingsFailingAfter.set(0)
    FaultyFileSystem.failingListings.set(0)
    val causes = Iterator.iterate[Throwable](error.getOrElse(fail("the UPDATE should have failed")))(_.getCause).takeWhile(_ != null).toSeq
    assert(causes.exists(_.isInstanceOf[CommitStateUnknownException]), causes.map(_.toString).mkString("\n"))

    val written = files(table.resolve("data")) -- dataBefore
    assert(written.nonEmpty, "the update wrote a data file, and it is still there")
    val ds = new Dataset(LocalStorage, table.toString)
    assert(ds.latestVersion == 3L, "the manifest the failed put wrote is the latest version")
    val named = ds.snapshot().fragments.flatMap(_.getFilesList.asScala).map(f => table.resolve(s"data/${f.getPath}"))
    assert(named.forall(Files.exists(_)) && named.toSet.intersect(written) == written)
    val rows = spark.sql("SELECT id, v FROM fl.db.t").collect().map(r => r.getLong(0) -> r.getInt(1)).toMap
    assert(rows.size == 100 && rows.forall { case (id, v) => v == (if (id % 10 == 0) 1 else 0) })
  }

  test("a streaming batch whose commit may have landed fails the query, keeps its files, and its replay is skipped") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS fl.db")
    val input = Files.createDirectories(root.resolve("stream-in"))
    val checkpoint = root.resolve("stream-cp").toString
    def batch(n: Int): Unit = Files.write(input.resolve(s"part-$n.json"), (n * 10 until n * 10 + 10).map(i => s"""{"id":$i}""").asJava)
    def run(): Unit = spark.readStream.schema("id BIGINT").option("maxFilesPerTrigger", "1").json(input.toString)
      .writeStream.format("lance").option("checkpointLocation", checkpoint)
      .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow()).toTable("fl.db.s").awaitTermination()
    batch(0)
    run()
    val table = root.resolve("wh/db/s.lance")
    val dataBefore = files(table.resolve("data"))
    batch(1)
    FaultyFileSystem.failNextManifest.set(true)
    FaultyFileSystem.listingsFailingAfter.set(1000)
    val error = try { run(); None } catch { case e: Exception => Some(e) }
    FaultyFileSystem.listingsFailingAfter.set(0)
    FaultyFileSystem.failingListings.set(0)
    val causes = Iterator.iterate[Throwable](error.getOrElse(fail("the query should have failed")))(_.getCause).takeWhile(_ != null).toSeq
    assert(causes.exists(_.isInstanceOf[CommitStateUnknownException]), causes.map(_.toString).mkString("\n"))
    // Spark's abort after the failed commit deleted nothing: the version that landed reads.
    val written = files(table.resolve("data")) -- dataBefore
    assert(written.nonEmpty && written.forall(Files.exists(_)))
    val versions = new Dataset(LocalStorage, table.toString).versions
    run() // batch 1 again, from the same offsets: the table holds it
    assert(new Dataset(LocalStorage, table.toString).versions == versions)
    assert(spark.table("fl.db.s").collect().map(_.getLong(0)).sorted.toSeq == (0L until 20L))
  }
}
