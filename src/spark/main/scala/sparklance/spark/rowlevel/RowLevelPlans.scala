package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, WriteDelta}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import sparklance.spark.LanceTable

/** Reads, in the optimizer's plan of a DELETE / UPDATE / MERGE on a sparklance table, where the target comes from. */
private[spark] object RowLevelPlans {
  /** The read of the target table inside a row-level write, with the operation that plans its scan. */
  final case class TargetRead(relation: DataSourceV2Relation, operation: LanceDeltaOperation)

  /** The sparklance table a (possibly aliased) relation reads. */
  def lanceTable(plan: LogicalPlan): Option[LanceTable] = EliminateSubqueryAliases(plan) match {
    case r: DataSourceV2Relation => r.table match {
      case t: LanceTable => Some(t)
      case _ => None
    }
    case _ => None
  }

  def targetRead(write: WriteDelta): Option[TargetRead] = write.query.collectFirst {
    case r: DataSourceV2Relation if operation(r).isDefined => TargetRead(r, operation(r).get)
  }

  /**
   * Spark reads a row-level target through its `RowLevelOperationTable(table, operation)`, a case
   * class private to Spark's packages: its fields are reached as a Product's elements.
   */
  private[spark] def operation(relation: DataSourceV2Relation): Option[LanceDeltaOperation] = relation.table match {
    case t: Product => t.productIterator.collectFirst { case op: LanceDeltaOperation => op }
    case _ => None
  }
}
