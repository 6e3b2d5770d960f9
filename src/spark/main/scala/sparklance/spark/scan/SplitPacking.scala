package sparklance.spark.scan

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.internal.SQLConf
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{ColumnShare, LanceSchema}

/**
 * Groups a scan's splits into input partitions with the budget Spark gives the files of a file
 * scan (`FilePartition`): a partition holds at most `spark.sql.files.maxPartitionBytes`, or less
 * when the whole scan is small, so that every core (`spark.sql.files.minPartitionNum`, else the
 * default parallelism) gets a share; each split also counts `spark.sql.files.openCostInBytes`, the
 * cost of opening its file. Without it every fragment was a task of its own: a table whose writes
 * left small fragments (small appends, the tails of files a write rolled over) paid a task per
 * fragment, and a scan of two columns of ten fragments of a million rows spent more time starting
 * tasks than reading.
 *
 * Unlike Spark, which sorts files by size and fills each partition in turn, splits keep table
 * order, within and across partitions (a query without ORDER BY sees rows in the order they were
 * written), and are cut into as many partitions as the budget needs, of equal shares: filled in
 * turn, the splits of a scan budgeted at a core's share made a small third partition that ran
 * alone after the first two. The bytes of a split are the stored bytes of the columns read, not
 * of its whole file.
 */
object SplitPacking {
  /** A split and the bytes it is expected to read. */
  final case class Sized(split: FragmentSplit, bytes: Long)

  /** At most `maxBytes` per partition, each split counting `openCost` bytes more than it reads. */
  final case class Budget(maxBytes: Long, openCost: Long)

  /** Spark's budget for a scan that reads `totalBytes` from `files` files. */
  def budget(totalBytes: Long, files: Int, conf: SQLConf = SQLConf.get): Budget = {
    val openCost = conf.filesOpenCostInBytes
    val cores = conf.filesMinPartitionNum.orElse(conf.getConf(SQLConf.LEAF_NODE_DEFAULT_PARALLELISM))
      .orElse(SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).map(_.sparkContext.defaultParallelism))
      .getOrElse(1)
    // Rounded up (Spark rounds down), so that the shares of all the cores hold the whole scan.
    val perCore = ceilDiv(totalBytes + files.toLong * openCost, math.max(1, cores))
    Budget(math.min(conf.filesMaxPartitionBytes, math.max(openCost, perCore)), openCost)
  }

  /**
   * The splits, in order, as the fewest partitions of equal shares the budget allows (at most
   * `spark.sql.files.maxPartitionNum`, where that is set), each reading at most `limit` rows. A
   * split goes to the partition whose share holds the middle of its bytes, so a partition exceeds
   * its share by at most half a split at either end, and a split larger than the budget has a
   * partition mostly to itself. Consecutive parts of one fragment in a partition become one split.
   */
  def pack(sized: Seq[Sized], budget: Budget, limit: Option[Int] = None, conf: SQLConf = SQLConf.get): Array[InputPartition] = {
    val splits = sized.toIndexedSeq // indexed below: a List would make packing quadratic in the splits
    // A part of a fragment right after its previous part opens no file when the two land together.
    val sizes = splits.indices.map { i =>
      splits(i).bytes + (if (i > 0 && continues(splits(i - 1).split, splits(i).split)) 0L else budget.openCost)
    }
    val total = sizes.sum
    val needed = ceilDiv(total, budget.maxBytes)
    val count = math.max(1L, conf.filesMaxPartitionNum.fold(needed)(most => math.min(needed, most.toLong)))
    val groups = ArrayBuffer.empty[ArrayBuffer[FragmentSplit]]
    var group = -1L
    var before = 0L
    splits.indices.foreach { i =>
      val share = if (total <= 0) 0L else math.min(count - 1, ((before + sizes(i) / 2.0) * count / total).toLong)
      val split = splits(i).split
      if (share != group) { groups += ArrayBuffer(split); group = share }
      else if (continues(groups.last.last, split)) groups.last(groups.last.size - 1) = groups.last.last.copy(end = split.end)
      else groups.last += split
      before += sizes(i)
    }
    groups.map(g => LanceInputPartition(g.toIndexedSeq, limit): InputPartition).toArray
  }

  /** Whether `b` is the range of `a`'s fragment right after `a`, read the same way: the two can be read as one split. */
  private def continues(a: FragmentSplit, b: FragmentSplit): Boolean =
    a.end == b.start && (a.fragment eq b.fragment) && (a.within eq b.within) &&
      a.change.isEmpty && b.change.isEmpty

  /** a / b rounded up; 1 where b is not positive. */
  def ceilDiv(a: Long, b: Long): Long = if (b <= 0) 1L else (a + b - 1) / b

  /** The stored bytes per row of `columns` in fragment `f`: its files' bytes per row, by the columns' share. */
  def rowBytes(f: DataFragment, schema: LanceSchema, columns: Set[String]): Double =
    rowBytes(f, new ColumnShare.Estimate(schema, columns))

  /** [[rowBytes]] by an estimate of the columns' share made once for all the fragments of a scan. */
  def rowBytes(f: DataFragment, share: ColumnShare.Estimate): Double =
    if (f.getPhysicalRows <= 0) 0.0
    else {
      var bytes = 0L
      var i = 0
      while (i < f.getFilesCount) { bytes += f.getFiles(i).getFileSizeBytes; i += 1 }
      val perRow = bytes.toDouble / f.getPhysicalRows
      perRow * share(perRow)
    }
}
