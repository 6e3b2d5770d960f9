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

  private def sized(bytes: Long*): Seq[SplitPacking.Sized] =
    bytes.zipWithIndex.map { case (b, i) => SplitPacking.Sized(FragmentSplit(Array.emptyByteArray, i, i + 1), b) }

  /** The splits of each partition, by their start (their index in `sized`). */
  private def starts(parts: Array[org.apache.spark.sql.connector.read.InputPartition]): Seq[Seq[Long]] =
    parts.toSeq.map(_.asInstanceOf[LanceInputPartition].splits.map(_.start))

  test("the budget is Spark's for files: a core's share, at least the open cost, at most maxPartitionBytes") {
    val c = conf(SQLConf.FILES_MIN_PARTITION_NUM.key -> "4")
    // 10 files of 10 MB: (100 + 10 * 4) MB over 4 cores.
    assert(SplitPacking.budget(100 * MB, 10, c) == SplitPacking.Budget(35 * MB, 4 * MB))
    assert(SplitPacking.budget(1000, 1, c).maxBytes == 4 * MB)
    assert(SplitPacking.budget(100000 * MB, 10, c).maxBytes == 128 * MB)
    val custom = conf(SQLConf.FILES_MIN_PARTITION_NUM.key -> "1", SQLConf.FILES_OPEN_COST_IN_BYTES.key -> "1000",
      SQLConf.FILES_MAX_PARTITION_BYTES.key -> "1000000")
    assert(SplitPacking.budget(500000, 2, custom) == SplitPacking.Budget(502000, 1000))
  }

  test("splits are packed in table order up to the budget, each counting the open cost") {
    val budget = SplitPacking.Budget(maxBytes = 100, openCost = 10)
    val c = conf()
    assert(starts(SplitPacking.pack(sized(40, 40, 40, 40), budget, conf = c)) == Seq(Seq(0L, 1L), Seq(2L, 3L)))
    // One split larger than the budget has a partition of its own; small ones around it are not reordered.
    assert(starts(SplitPacking.pack(sized(5, 500, 5, 5), budget, conf = c)) == Seq(Seq(0L), Seq(1L), Seq(2L, 3L)))
    // As in Spark, a split joins while the bytes before it, open costs included, leave room for its own.
    assert(starts(SplitPacking.pack(sized(Seq.fill(12)(0L): _*), budget, conf = c)) == Seq((0L to 10L), Seq(11L)))
    assert(SplitPacking.pack(Nil, budget, conf = c).isEmpty)
    val limited = SplitPacking.pack(sized(1, 1), budget, Some(7), c)
    assert(limited.map(_.asInstanceOf[LanceInputPartition].limit).toSeq == Seq(Some(7)))
  }

  test("spark.sql.files.maxPartitionNum raises the budget until the splits fit") {
    val budget = SplitPacking.Budget(maxBytes = 100, openCost = 10)
    val parts = SplitPacking.pack(sized(Seq.fill(20)(40L): _*), budget, conf = conf(SQLConf.FILES_MAX_PARTITION_NUM.key -> "3"))
    assert(parts.length <= 4)
    assert(starts(parts).flatten == (0L until 20L))
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
