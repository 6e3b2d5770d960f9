package sparklance.spark

import java.nio.file.{Files, Path}
import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** A local SparkSession with the catalog `lance` over a fresh warehouse directory. */
trait LocalSpark extends BeforeAndAfterAll { self: Suite =>
  lazy val warehouse: Path = Files.createTempDirectory("sparklance-wh")
  lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.catalog.lance", classOf[LanceCatalog].getName)
    .config("spark.sql.catalog.lance.warehouse", warehouse.toString)
    .config("spark.sql.extensions", classOf[LanceSparkSessionExtensions].getName)
    .getOrCreate()

  def sql(q: String) = spark.sql(q)

  override def afterAll(): Unit = {
    try spark.stop() finally super.afterAll()
  }
}
