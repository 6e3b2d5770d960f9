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

  /** `body`'s result and the Spark jobs it ran (those of its job group). */
  def jobsOf[T](body: => T): (T, Int) = {
    val sc = spark.sparkContext
    val group = s"counted-${System.nanoTime}"
    val started = new java.util.concurrent.ConcurrentLinkedQueue[String]()
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit =
        Option(e.properties).flatMap(p => Option(p.getProperty("spark.jobGroup.id"))).foreach(started.add)
    }
    sc.addSparkListener(listener)
    try {
      sc.setJobGroup(group, "counted")
      val result = try body finally sc.clearJobGroup()
      // Listeners get events in order: once a job started after `body` is seen, all of body's are.
      sc.setJobGroup(s"$group-marker", "marker")
      try sc.parallelize(Seq(1), 1).count() finally sc.clearJobGroup()
      // Bounded: a listener event Spark dropped (its queue full) must fail the test, not hang it.
      val deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(2)
      while (!started.contains(s"$group-marker")) {
        if (System.nanoTime() > deadline) throw new AssertionError("Spark's listener never saw the marker job start")
        Thread.sleep(10)
      }
      (result, started.toArray.count(_ == group))
    } finally sc.removeSparkListener(listener)
  }

  override def afterAll(): Unit = {
    try spark.stop()
    finally try sparklance.format.io.LocalStorage.deleteRecursively(warehouse.toString) finally super.afterAll()
  }
}
