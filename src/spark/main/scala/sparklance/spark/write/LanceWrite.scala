package sparklance.spark.write

import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, SortOrder}
import org.apache.spark.sql.connector.write.{BatchWrite, RequiresDistributionAndOrdering, Write}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite

/**
 * The logical write of an append or overwrite; `batch` builds its [[LanceBatchWrite]], `streaming`
 * the [[LanceStreamingWrite]] of a streaming query's micro-batches. With an
 * [[OptimizedWrite]] it asks Spark to rebalance the input into about one fragment per task.
 */
final class LanceWrite(batch: () => BatchWrite, streaming: Option[() => StreamingWrite], mode: WriteMode, optimized: Option[OptimizedWrite])
    extends Write with RequiresDistributionAndOrdering {
  override def description(): String = mode match {
    case WriteMode.Append => "lance append"
    case WriteMode.Replace => "lance overwrite"
    case WriteMode.ReplacePartitions => "lance dynamic overwrite"
  }
  override def toBatch: BatchWrite = batch()
  override def toStreaming: StreamingWrite = streaming.fold(super.toStreaming)(_())

  override def requiredDistribution(): Distribution = optimized.fold(Distributions.unspecified(): Distribution)(o =>
    Distributions.clustered(o.columns.map(c => Expressions.column(c): Expression).toArray))

  // Not strict: adaptive execution may merge and split partitions toward the advisory size.
  override def distributionStrictlyRequired(): Boolean = false

  override def requiredOrdering(): Array[SortOrder] = Array.empty

  override def advisoryPartitionSizeInBytes(): Long = optimized.fold(0L)(_.advisoryPartitionBytes)
}
