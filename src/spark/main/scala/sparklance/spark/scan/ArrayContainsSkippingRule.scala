package sparklance.spark.scan

import org.apache.spark.sql.catalyst.expressions.{And, ApplyFunctionExpression, ArrayContains, Expression, Literal, Or, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.ColumnOrField
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.internal.SQLConf
import sparklance.spark.LanceTable
import sparklance.spark.rowlevel.RowLevelPlans

/**
 * Lets a LABEL_LIST index skip rows for `array_contains(column, value)` in a filter on a Lance
 * table: beside each conjunct that tests it under AND and OR only, it adds a copy of the conjunct
 * with each such test replaced by an [[ArrayContainsHint]] on the same column and value, which
 * Spark pushes into the scan. The copy is implied by the conjunct, which stays: were it evaluated
 * anywhere (a hint is true), it would keep a superset of the conjunct's rows; the scan takes it
 * whole. A test under NOT, or inside any other expression, is left alone (NOT of a hint is false).
 * Only with `spark.sql.dataSource.alwaysCreateV2Predicate` on (Spark's default): without it Spark
 * refuses a boolean function where it expects a predicate.
 */
object ArrayContainsSkippingRule extends Rule[LogicalPlan] with PredicateHelper {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!conf.getConf(SQLConf.DATA_SOURCE_ALWAYS_CREATE_V2_PREDICATE)) plan
    else plan.transformUp {
      case f @ Filter(condition, relation: DataSourceV2Relation) if isLance(relation) =>
        val conjuncts = splitConjunctivePredicates(condition)
        val hints = conjuncts.flatMap(hinted).filterNot(conjuncts.contains)
        if (hints.isEmpty) f else f.copy(condition = (conjuncts ++ hints).reduce(And))
    }

  /** `e` with its `array_contains` tests under AND and OR replaced by hints; None without any. */
  private def hinted(e: Expression): Option[Expression] = e match {
    case ArrayContains(column @ ColumnOrField(_), value: Literal) if value.value != null =>
      Some(ApplyFunctionExpression(ArrayContainsHint(column.dataType, value.dataType), Seq(column, value)))
    case And(l, r) => (hinted(l), hinted(r)) match {
      case (None, None) => None
      case (hl, hr) => Some(And(hl.getOrElse(l), hr.getOrElse(r)))
    }
    case Or(l, r) => (hinted(l), hinted(r)) match {
      case (None, None) => None
      case (hl, hr) => Some(Or(hl.getOrElse(l), hr.getOrElse(r)))
    }
    case _ => None
  }

  // A DELETE, UPDATE or MERGE reads its target through Spark's wrapper of the table.
  private def isLance(relation: DataSourceV2Relation): Boolean =
    relation.table.isInstanceOf[LanceTable] || RowLevelPlans.operation(relation).isDefined
}
