package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.internal.SQLConf

/** What the optimizer knows of the size of a row-level statement's source, which a runtime filter reads a second time. */
private[rowlevel] object SourceSize {
  /**
   * The most rows `plan` returns, where Spark knows a bound: from its operators (a local
   * relation, a limit), or its statistics, which a projection's do not carry over without
   * cost-based optimization although it keeps every row.
   */
  def rowsAtMost(plan: LogicalPlan): Option[BigInt] = {
    val below = plan match {
      case p: Project => rowsAtMost(p.child)
      case _ => None
    }
    (plan.maxRows.map(BigInt(_)) ++ plan.stats.rowCount ++ below).minOption
  }

  /**
   * Whether the source is small enough to read again for a filter of its keys: no larger than
   * Spark's runtime Bloom filter creation-side threshold
   * (`spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold`, 10 MB by default).
   */
  def small(plan: LogicalPlan): Boolean =
    plan.stats.sizeInBytes <= BigInt(SQLConf.get.getConf(SQLConf.RUNTIME_BLOOM_FILTER_CREATION_SIDE_THRESHOLD))
}
