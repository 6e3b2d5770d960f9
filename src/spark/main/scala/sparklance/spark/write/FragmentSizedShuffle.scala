package sparklance.spark.write

import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import scala.collection.mutable.ArrayBuffer

/**
 * Cuts the shuffle of an optimized write into tasks of at most one fragment's rows, so that an
 * append leaves no small tail fragment after each full one. Adaptive execution alone sizes the
 * write's tasks by bytes, with two effects that left tails: by default it keeps at least
 * `spark.default.parallelism` tasks (`spark.sql.adaptive.coalescePartitions.parallelismFirst`), so
 * an append of 1M rows on two cores became two fragments of 500k; and the fragment's bytes the
 * write advises are an estimate of uncompressed rows while the shuffle counts compressed bytes, so
 * a task got 2.4 fragments' rows and wrote two full fragments and a tail.
 *
 * This query stage rule (sparklance's session extension) runs after Spark's own on the stage that
 * reads the write's shuffle, recognised by the advisory size [[OptimizedWrite.plan]] registered
 * with its fragment's rows. From the shuffle's row count and its bytes per partition it takes the
 * shuffle's own bytes per row and groups neighbouring partitions into tasks of at most
 * [[FragmentSizedShuffle.Fill]] of a fragment's rows. An input of at most one fragment's rows is
 * one task. A shuffle with a partition larger than that is too coarse to be grouped (split by map
 * outputs, 2 partitions of 2 fragments' rows made 6 fragments, written whole each task left a tail:
 * 5; Spark's own plan gave 4): Spark's coalescing stays then, as it does without the extension or
 * a row count. Spark's default of 200 shuffle partitions is fine enough for up to 200 fragments.
 */
final case class FragmentSizedShuffle(session: SparkSession) extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    // Reads of several shuffles in one stage must keep their partitions aligned: left alone.
    val reads = plan.collect { case s: ShuffleQueryStageExec => s }
    if (reads.size != 1) plan
    else replaced(plan)
  }

  // Not transformUp / transformDown: they would visit the stage again under the read made for it.
  private def replaced(plan: SparkPlan): SparkPlan = plan match {
    case read @ AQEShuffleReadExec(stage: ShuffleQueryStageExec, _) => resized(stage).getOrElse(read)
    case stage: ShuffleQueryStageExec => resized(stage).getOrElse(stage)
    case other => other.withNewChildren(other.children.map(replaced))
  }

  private def resized(stage: ShuffleQueryStageExec): Option[SparkPlan] = for {
    advisory <- stage.advisoryPartitionSize
    rowsPerFile <- FragmentSizedShuffle.fragmentRowsOf(advisory)
    stats <- stage.mapStats
    rows <- stage.getRuntimeStatistics.rowCount
    if rows > 0
    specs <- FragmentSizedShuffle.specs(stats.bytesByPartitionId, rows.toLong, rowsPerFile)
  } yield AQEShuffleReadExec(stage, specs)
}

object FragmentSizedShuffle {
  /**
   * How full of rows a task may be planned, as a share of a fragment: a partition's rows are
   * estimated from its bytes, and a task that got a few rows more than a fragment would write them
   * as a tiny fragment of their own.
   */
  val Fill = 0.98

  // Fragment rows by the advisory size an optimized write asked for. Entries are few (one per
  // distinct table shape and `max_rows_per_file`) and hold two numbers, so they are kept.
  private val fragmentRows = new ConcurrentHashMap[java.lang.Long, java.lang.Long]()

  // The advisory sizes of writes that pack their partial fragments at commit (see OptimizedWrite.packing).
  private val packingSizes = ConcurrentHashMap.newKeySet[java.lang.Long]()

  /**
   * Marks a shuffle of `advisoryBytes` per partition as an optimized write's of `rowsPerFile` rows
   * per fragment; `packs`: one whose commit packs partial fragments.
   */
  def register(advisoryBytes: Long, rowsPerFile: Long, packs: Boolean = false): Unit = {
    fragmentRows.put(advisoryBytes, rowsPerFile)
    if (packs) packingSizes.add(advisoryBytes)
  }

  private[write] def fragmentRowsOf(advisoryBytes: Long): Option[Long] = Option(fragmentRows.get(advisoryBytes)).map(_.longValue)

  /** The fragment rows of a packing write's shuffle of `advisoryBytes` per partition. */
  private[write] def packingRowsPerFile(advisoryBytes: Long): Option[Long] =
    if (packingSizes.contains(advisoryBytes)) fragmentRowsOf(advisoryBytes) else None

  /**
   * The tasks reading a shuffle of `rows` rows whose partitions hold `bytes`: neighbouring
   * partitions grouped into even shares of the rows, none over [[Fill]] of `rowsPerFile` (rows
   * estimated from bytes); None when a partition is over that.
   */
  def specs(bytes: Array[Long], rows: Long, rowsPerFile: Long): Option[Seq[ShufflePartitionSpec]] = {
    val total = bytes.sum
    val cap = math.max(1L, (rowsPerFile * Fill * total.toDouble / math.max(rows, 1L)).toLong)
    if (rows <= rowsPerFile || total == 0) Some(Seq(CoalescedPartitionSpec(0, bytes.length, total)))
    else if (bytes.exists(_ > cap)) None
    else {
      val tasks = math.ceil(total.toDouble / cap)
      val out = ArrayBuffer.empty[ShufflePartitionSpec]
      var start = 0
      var size = 0L
      var done = 0L
      def close(end: Int): Unit = { if (end > start) out += CoalescedPartitionSpec(start, end, size); start = end; size = 0L }
      // Tasks end at the partition boundaries nearest to even shares of the bytes, never over `cap`.
      def boundary: Double = (out.size + 1) * (total / tasks)
      for (p <- bytes.indices) {
        if (size + bytes(p) > cap) close(p)
        size += bytes(p)
        done += bytes(p)
        val next = if (p + 1 < bytes.length) bytes(p + 1) else 0L
        if (done + next / 2.0 >= boundary) close(p + 1)
      }
      close(bytes.length)
      Some(out.toSeq)
    }
  }
}
