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
    // Spark's own catalog would otherwise create spark-warehouse/ in the working directory.
    .config("spark.sql.warehouse.dir", warehouse.resolve("spark-catalog").toString)
    .config("spark.sql.catalog.lance", classOf[LanceCatalog].getName)
    .config("spark.sql.catalog.lance.warehouse", warehouse.toString)
    .config("spark.sql.extensions", classOf[LanceSparkSessionExtensions].getName)
    .getOrCreate()

  def sql(q: String) = spark.sql(q)

  /** Runs `f` with the session settings `pairs`, then restores what was set before. */
  def withSQLConf[T](pairs: (String, String)*)(f: => T): T = {
    val before = pairs.map { case (key, _) => key -> spark.conf.getOption(key) }
    pairs.foreach { case (key, value) => spark.conf.set(key, value) }
    try f finally before.foreach {
      case (key, Some(value)) => spark.conf.set(key, value)
      case (key, None) => spark.conf.unset(key)
    }
  }

  override def afterAll(): Unit = {
    try spark.stop()
    finally try sparklance.format.io.LocalStorage.deleteRecursively(warehouse.toString) finally super.afterAll()
  }
}
