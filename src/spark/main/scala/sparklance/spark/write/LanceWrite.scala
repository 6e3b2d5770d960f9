package sparklance.spark.write

import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, SortDirection, SortOrder}
import org.apache.spark.sql.connector.write.{BatchWrite, RequiresDistributionAndOrdering, Write}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite

/**
 * The logical write of an append or overwrite; `batch` builds its [[LanceBatchWrite]], `streaming`
 * the [[LanceStreamingWrite]] of a streaming query's micro-batches. With an
 * [[OptimizedWrite]] it asks Spark to rebalance the input into about one fragment per task; on a
 * clustered table, to sort each task's rows by the clustering columns.
 */
final class LanceWrite(batch: () => BatchWrite, streaming: Option[() => StreamingWrite], mode: WriteMode, planned: Option[OptimizedWrite],
    clustering: Seq[String] = Nil)
    extends Write with RequiresDistributionAndOrdering {
  private val optimized = planned.map(_.packing)

  override def description(): String = mode match {
    case WriteMode.Append => "lance append"
    case WriteMode.Replace => "lance overwrite"
    case WriteMode.ReplacePartitions => "lance dynamic overwrite"
  }
  // An optimized write packs what its tasks left partial (the input may have reached them unshuffled, see ShuffleFreeWrite).
  override def toBatch: BatchWrite = batch() match {
    case b: LanceBatchWrite if optimized.isDefined => b.packingTails
    case b => b
  }
  override def toStreaming: StreamingWrite = streaming.fold(super.toStreaming)(_())

  override def requiredDistribution(): Distribution = optimized.fold(Distributions.unspecified(): Distribution)(o =>
    Distributions.clustered(o.columns.map(c => Expressions.column(c): Expression).toArray))

  // Not strict: adaptive execution may merge and split partitions toward the advisory size.
  override def distributionStrictlyRequired(): Boolean = false

  // A clustered table's new fragments hold their rows in clustering order, so that their zone maps
  // cover narrow ranges; across fragments, compaction lays the rows out (see layout.LayoutRewrite).
  override def requiredOrdering(): Array[SortOrder] =
    clustering.map(c => Expressions.sort(Expressions.column(s"`${c.replace("`", "``")}`"), SortDirection.ASCENDING)).toArray

  override def advisoryPartitionSizeInBytes(): Long = optimized.fold(0L)(_.advisoryPartitionBytes)
}
