package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Add, Alias, Attribute, Expression, Literal, PredicateHelper}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Count}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.util.V2ExpressionBuilder
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation
import sparklance.format.skipping.ColumnFilter

/**
 * Plans `SELECT count(*) FROM t WHERE ...` with the rows of the fragments whose every row the
 * table's indices decide counted on the driver ([[LanceScan.countedByIndices]]): zones whose
 * bounds prove that all their rows pass or fail the filter, rows a BTREE or BITMAP index names.
 * Spark pushes a count into a scan only when the scan takes the whole filter, which ours leaves
 * for Spark to evaluate; so the count is otherwise a job reading every fragment data skipping
 * keeps. When every fragment is decided the answer is a local relation; otherwise the count
 * reads the undecided fragments alone and adds the rest. Only a filter the indices judge exactly
 * (every conjunct) is taken. The logical plan keeps the whole scan, so a statement's reads
 * (serializable isolation) are what they were (see [[StatementReads]]).
 */
object FilteredCountStrategy extends SparkStrategy with PredicateHelper {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case aggregate: Aggregate if aggregate.groupingExpressions.isEmpty && aggregate.aggregateExpressions.nonEmpty &&
        aggregate.aggregateExpressions.forall(countsRows) =>
      filteredScan(aggregate.child).toSeq.flatMap { case (filter, condition, relation, scan) =>
        val counted = scan.countedByIndices(filter)
        if (counted.isEmpty) Nil
        else {
          val known = counted.valuesIterator.sum
          if (counted.size == scan.fragmentCount)
            planLater(LocalRelation(aggregate.output, Seq(InternalRow.fromSeq(aggregate.output.map(_ => known))))) :: Nil
          else {
            // The count of the other fragments, plus those counted here, under the query's own names.
            val scanned = LanceScan.inRelation(relation, scan.without(counted.keySet))
            val total = aggregate.aggregateExpressions.map { e =>
              Alias(Add(e.asInstanceOf[Alias].child, Literal(known)), e.name)(exprId = e.exprId)
            }
            planLater(Aggregate(Nil, total, Filter(condition, scanned))) :: Nil
          }
        }
      }
    case _ => Nil
  }

  /** `count(*)` (Spark's `count(1)`): a count of rows whatever their values. */
  private def countsRows(e: Expression): Boolean = e match {
    case Alias(AggregateExpression(Count(children), Complete, false, None, _), _) =>
      children.nonEmpty && children.forall(c => c.foldable && c.isInstanceOf[Literal] && c.asInstanceOf[Literal].value != null)
    case _ => false
  }

  /**
   * A filter over a plain scan of a Lance table (through a projection of its columns), with the
   * filter as data skipping states it exactly; None when a part of it is not.
   */
  private def filteredScan(plan: LogicalPlan): Option[(ColumnFilter, Expression, DataSourceV2ScanRelation, LanceScan)] = plan match {
    case Project(list, child) if list.forall(_.isInstanceOf[Attribute]) => filteredScan(child)
    case Filter(condition, relation: DataSourceV2ScanRelation)
        if relation.scan.getClass == classOf[LanceScan] && condition.deterministic =>
      val scan = relation.scan.asInstanceOf[LanceScan]
      val filters = splitConjunctivePredicates(condition).map(c =>
        new V2ExpressionBuilder(c, true).buildPredicate().flatMap(DataFilters.exactly(_, scan.tableSchema)))
      if (filters.forall(_.isDefined)) Some((filters.flatten.reduce(ColumnFilter.And(_, _)), condition, relation, scan))
      else None
    case _ => None
  }
}
