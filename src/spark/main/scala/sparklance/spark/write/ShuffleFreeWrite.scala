package sparklance.spark.write

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, RepartitionOperation}
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{REBALANCE_PARTITIONS_BY_COL, ShuffleExchangeExec}

/**
 * Drops the shuffle of an optimized write (see [[OptimizedWrite]]) whose input partitions are
 * large enough to be written as they are: on average at least [[ShuffleFreeWrite.MinFragmentsPerTask]]
 * fragments' rows each. Each task then cuts its rows into full fragments and leaves one partial
 * one, which the commit packs into full ones ([[LanceBatchWrite]]), rewriting less than one
 * fragment's rows per task, under a quarter of the rows; the shuffle it saves moves every row
 * (serialized, compressed, written to disk and read back: an append of 10M rows in two partitions
 * took 1.5x the time of the same append unshuffled).
 *
 * A query stage preparation rule (sparklance's session extension): it sees the physical plan
 * before adaptive execution makes stages of it. The shuffle is recognised as the rebalance with
 * the advisory size [[OptimizedWrite.packing]] registered (an append's or overwrite's; a row-level
 * operation's does not pack, and keeps its shuffle); the input's rows are Spark's estimate of a relation
 * under projections (see `counted`); the shuffle stays when in doubt.
 */
final case class ShuffleFreeWrite(session: SparkSession) extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case s: ShuffleExchangeExec if s.shuffleOrigin == REBALANCE_PARTITIONS_BY_COL && unneeded(s) => s.child
  }

  private def unneeded(s: ShuffleExchangeExec): Boolean = (for {
    advisory <- s.advisoryPartitionSize
    rowsPerFile <- FragmentSizedShuffle.packingRowsPerFile(advisory)
    rows <- ShuffleFreeWrite.estimatedRows(s.child)
  } yield ShuffleFreeWrite.largeEnough(rows, s.child.outputPartitioning.numPartitions, rowsPerFile)).getOrElse(false)
}

object ShuffleFreeWrite {
  /** The fewest fragments' rows an input partition should hold on average for its rows to go unshuffled. */
  val MinFragmentsPerTask = 4

  /**
   * The most input partitions written unshuffled: the driver packs their partial fragments alone,
   * one after another (at most about one fragment's rows per task), where the shuffle's work is
   * spread over the cluster's executors.
   */
  val MaxTasks = 16

  def largeEnough(rows: BigInt, partitions: Int, rowsPerFile: Long): Boolean =
    partitions > 0 && partitions <= MaxTasks && rows >= BigInt(partitions) * MinFragmentsPerTask * rowsPerFile

  private def estimatedRows(plan: SparkPlan): Option[BigInt] = plan.logicalLink.flatMap(counted)

  // Rows counted only where Spark's estimate does not overcount: a relation's (its row count, else
  // its size over a row's estimated size, fewer than a compressed file holds), through projections
  // and repartitions, which keep it (Spark's estimate without cost-based optimization forgets the count above a
  // projection). Filters, joins and aggregates keep their input's size as their estimate: a
  // filter keeping 1% of 10M rows in 8 partitions would go unshuffled and leave 8 partial
  // fragments too many to pack; their shuffle stays.
  private def counted(plan: LogicalPlan): Option[BigInt] = plan match {
    case p: Project => counted(p.child)
    case r: RepartitionOperation => counted(r.child)
    case leaf if leaf.children.isEmpty =>
      Some(leaf.stats.rowCount.getOrElse(leaf.stats.sizeInBytes / EstimationUtils.getSizePerRow(leaf.output)))
    case _ => None
  }
}
