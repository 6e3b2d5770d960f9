package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.internal.SQLConf
import org.scalatest.funsuite.AnyFunSuite
import sparklance.spark.scan.{FragmentSplit, LanceInputPartition, SplitPacking}

class SplitPackingSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private val MB = 1L << 20

  private def conf(pairs: (String, String)*): SQLConf = {
    val c = new SQLConf
    pairs.foreach { case (k, v) => c.setConfString(k, v) }
    c
  }

  /** Splits of one row each, every one of its own fragment. */
  private def sized(bytes: Long*): Seq[SplitPacking.Sized] =
    bytes.zipWithIndex.map { case (b, i) => SplitPacking.Sized(FragmentSplit(Array(i.toByte), i, i + 1), b) }

  /** The splits of each partition, by their start (their index in `sized`). */
  private def starts(parts: Array[org.apache.spark.sql.connector.read.InputPartition]): Seq[Seq[Long]] =
    parts.toSeq.map(_.asInstanceOf[LanceInputPartition].splits.map(_.start))

  test("the budget is Spark's for files: a core's share, at least the open cost, at most maxPartitionBytes") {
    val c = conf(SQLConf.FILES_MIN_PARTITION_NUM.key -> "4")
    // 10 files of 10 MB: (100 + 10 * 4) MB over 4 cores.
    assert(SplitPacking.budget(100 * MB, 10, c) == SplitPacking.Budget(35 * MB, 4 * MB))
    assert(SplitPacking.budget(1000, 1, c).maxBytes == 4 * MB)
    assert(SplitPacking.budget(100000 * MB, 10, c).maxBytes == 128 * MB)
    val custom = conf(SQLConf.FILES_MIN_PARTITION_NUM.key -> "3", SQLConf.FILES_OPEN_COST_IN_BYTES.key -> "1000",
      SQLConf.FILES_MAX_PARTITION_BYTES.key -> "1000000")
    // Rounded up: three shares of 167,334 hold all 502,000 bytes.
    assert(SplitPacking.budget(500000, 2, custom) == SplitPacking.Budget(167334, 1000))
  }

  test("splits keep table order, cut into as many equal shares as the budget needs") {
    val budget = SplitPacking.Budget(maxBytes = 100, openCost = 10)
    val c = conf()
    assert(starts(SplitPacking.pack(sized(40, 40, 40, 40), budget, conf = c)) == Seq(Seq(0L, 1L), Seq(2L, 3L)))
    // Filled in turn, these 160 bytes in a budget of 100 would be 100 and then 60; in shares, 70 and 90.
    assert(starts(SplitPacking.pack(sized(30, 20, 20, 30, 10), budget, conf = c)) == Seq(Seq(0L, 1L), Seq(2L, 3L, 4L)))
    // A split larger than the budget has a partition to itself; small ones around it are not reordered.
    assert(starts(SplitPacking.pack(sized(5, 500, 5, 5), budget, conf = c)) == Seq(Seq(0L), Seq(1L), Seq(2L, 3L)))
    assert(starts(SplitPacking.pack(sized(Seq.fill(12)(0L): _*), budget, conf = c)) == Seq((0L to 5L), (6L to 11L)))
    assert(SplitPacking.pack(Nil, budget, conf = c).isEmpty)
    val limited = SplitPacking.pack(sized(1, 1), budget, Some(7), c)
    assert(limited.map(_.asInstanceOf[LanceInputPartition].limit).toSeq == Seq(Some(7)))
    // Every split of a random scan lands once, in order, and no partition exceeds its share by more than a split.
    val random = new scala.util.Random(5)
    for (_ <- 0 until 200) {
      val bytes = Seq.fill(1 + random.nextInt(60))(if (random.nextBoolean()) random.nextInt(200).toLong else random.nextInt(5).toLong)
      val parts = SplitPacking.pack(sized(bytes: _*), budget, conf = c)
      assert(starts(parts).flatten == bytes.indices.map(_.toLong))
      val total = bytes.map(_ + 10).sum
      val share = total.toDouble / math.max(1L, (total + 99) / 100)
      starts(parts).foreach { p =>
        val held = p.map(i => bytes(i.toInt) + 10)
        assert(held.size == 1 || held.sum <= share + held.max, (bytes, starts(parts)))
      }
    }
  }

  test("parts of one fragment that land in one partition are read as one split") {
    val fragment = Array[Byte](1, 2, 3)
    val other = Array[Byte](4)
    val within = Some(Array[Byte](9))
    val parts = Seq(FragmentSplit(fragment, 0, 10, within = within), FragmentSplit(fragment, 10, 20, within = within),
      FragmentSplit(other, 0, 5), FragmentSplit(fragment, 20, 30, within = within), FragmentSplit(fragment, 40, 50, within = within))
    val packed = SplitPacking.pack(parts.map(SplitPacking.Sized(_, 1)), SplitPacking.Budget(1000, 1), conf = conf())
    assert(packed.toSeq.map(_.asInstanceOf[LanceInputPartition].splits.map(s => (s.fragment.toSeq, s.start, s.end))) ==
      Seq(Seq((fragment.toSeq, 0L, 20L), (other.toSeq, 0L, 5L), (fragment.toSeq, 20L, 30L), (fragment.toSeq, 40L, 50L))))
  }

  test("spark.sql.files.maxPartitionNum bounds the partitions") {
    val budget = SplitPacking.Budget(maxBytes = 100, openCost = 10)
    val parts = SplitPacking.pack(sized(Seq.fill(20)(40L): _*), budget, conf = conf(SQLConf.FILES_MAX_PARTITION_NUM.key -> "3"))
    assert(starts(parts) == Seq((0L to 6L), (7L to 12L), (13L to 19L)))
  }

  private def splitsRead(df: DataFrame): Long = {
    df.collect()
    collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.metrics("splitsRead").value }.sum
  }

  test("a table of many small fragments is read by a task per core, in table order") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sp")
    sql("CREATE TABLE lance.sp.small (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '250', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.sp.small SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(10000)")
    val df = spark.table("lance.sp.small")
    assert(df.rdd.getNumPartitions == spark.sparkContext.defaultParallelism)
    assert(df.collect().map(_.getLong(0)).toSeq == (0L until 10000L))
    assert(splitsRead(df) == 40)
    // Cut by split_rows into 3 parts each, a fragment is still read as one split where its parts land together.
    val cut = spark.read.option("split_rows", "100").table("lance.sp.small")
    assert(cut.collect().map(_.getLong(0)).toSeq == (0L until 10000L))
    assert(splitsRead(cut) <= 41)
    assert(sql("SELECT count(*), sum(id), max(s) FROM lance.sp.small WHERE id % 7 = 3").head().toSeq ==
      Seq(1429L, (0L until 10000L).filter(_ % 7 == 3).sum, "9999"))
    // An open cost as large as a partition's budget gives every split a task, as for files.
    withSQLConf(SQLConf.FILES_OPEN_COST_IN_BYTES.key -> (128 * MB).toString) {
      assert(spark.table("lance.sp.small").rdd.getNumPartitions == 40)
    }
  }

  test("a fragment holding more than a core's share is split so that every core reads part of it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sp")
    sql("CREATE TABLE lance.sp.one (id BIGINT) TBLPROPERTIES ('optimize_write' = 'false')")
    // Random longs, which no encoding shrinks: 8 MB, more than half of (8 MB + the open cost).
    sql("INSERT INTO lance.sp.one SELECT /*+ COALESCE(1) */ xxhash64(id) FROM range(1000000)")
    val df = sql("SELECT id FROM lance.sp.one")
    assert(df.rdd.getNumPartitions == 2)
    assert(splitsRead(df) == 2)
    val expected = sql("SELECT count(*), sum(xxhash64(id) % 1000) FROM range(1000000)").head()
    assert(sql("SELECT count(*), sum(id % 1000) FROM lance.sp.one").head() == expected)
  }
}
