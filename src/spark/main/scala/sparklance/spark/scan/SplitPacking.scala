package sparklance.spark.scan

import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.internal.SQLConf
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{ColumnShare, LanceSchema}

/**
 * Groups a scan's splits into input partitions by the rule Spark applies to the files of a file
 * scan (`FilePartition`): a partition takes splits until it holds `spark.sql.files.maxPartitionBytes`,
 * or less when the whole scan is small, so that every core (`spark.sql.files.minPartitionNum`,
 * else the default parallelism) gets a share; each split also counts
 * `spark.sql.files.openCostInBytes`, the cost of opening its file. Without it every fragment was a
 * task of its own: a table whose writes left small fragments (small appends, the tails of files a
 * write rolled over) paid a task per fragment, and a scan of two columns of ten fragments of a
 * million rows spent more time starting tasks than reading.
 *
 * Unlike Spark, which sorts files by size first, splits keep table order, within and across
 * partitions: a query without ORDER BY sees the table's rows in the order they were written.
 * The bytes of a split are the stored bytes of the columns read, not of its whole file.
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
      .getOrElse(org.apache.spark.sql.SparkSession.active.sparkContext.defaultParallelism)
    val perCore = (totalBytes + files.toLong * openCost) / math.max(1, cores)
    Budget(math.min(conf.filesMaxPartitionBytes, math.max(openCost, perCore)), openCost)
  }

  /**
   * The splits, in order, as input partitions of at most the budget's bytes (a split larger than
   * that alone), each reading at most `limit` rows; at most `spark.sql.files.maxPartitionNum`
   * partitions, where that is set, by raising the budget as Spark does.
   */
  def pack(splits: Seq[Sized], budget: Budget, limit: Option[Int] = None, conf: SQLConf = SQLConf.get): Array[InputPartition] = {
    val groups = nextFit(splits, budget)
    val packed = conf.filesMaxPartitionNum match {
      case Some(most) if groups.size > most =>
        val total = splits.map(_.bytes + budget.openCost).sum
        nextFit(splits, budget.copy(maxBytes = total / most))
      case _ => groups
    }
    packed.map(g => LanceInputPartition(g.map(_.split).toIndexedSeq, limit): InputPartition).toArray
  }

  private def nextFit(splits: Seq[Sized], budget: Budget): Seq[Seq[Sized]] = {
    val groups = ArrayBuffer.empty[Seq[Sized]]
    val current = ArrayBuffer.empty[Sized]
    var bytes = 0L
    splits.foreach { s =>
      if (current.nonEmpty && bytes + s.bytes > budget.maxBytes) {
        groups += current.toList
        current.clear()
        bytes = 0L
      }
      current += s
      bytes += s.bytes + budget.openCost
    }
    if (current.nonEmpty) groups += current.toList
    groups.toSeq
  }

  /** The stored bytes per row of `columns` in fragment `f`: its files' bytes per row, by the columns' share. */
  def rowBytes(f: DataFragment, schema: LanceSchema, columns: Set[String]): Double =
    if (f.getPhysicalRows <= 0) 0.0
    else {
      val perRow = f.getFilesList.asScala.map(_.getFileSizeBytes).sum.toDouble / f.getPhysicalRows
      perRow * ColumnShare.of(schema, columns, perRow)
    }
}
