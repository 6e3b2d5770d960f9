package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * An exact nearest join's search ([[NearestJoinRule]]): for each row of `child` (the query side),
 * the row ids (`hit`, i.e. `_rowid`) and ranking values (`distance`) of the k nearest rows of the
 * table `target`, by `ranking`, that pass the table side's filters (`target.allowed`); with
 * `outer`, a row with NULLs for a query that has none. Planned as [[ExactNearestExec]], which
 * answers `blockRows` queries per pass over the table's vectors.
 */
final case class ExactNearestScan(query: Expression, ranking: NearestRanking, target: ProbeTarget, outer: Boolean,
    blockRows: Int, hit: AttributeReference, distance: AttributeReference, child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output :+ hit :+ distance
  override def producedAttributes: AttributeSet = AttributeSet(Seq(hit, distance))
  override protected def withNewChildInternal(newChild: LogicalPlan): ExactNearestScan = copy(child = newChild)
}
