package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, WriteDelta}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Tells a DELETE / UPDATE / MERGE on a sparklance table which target columns its conditions read
 * (filters, and the MERGE join's condition), before Spark builds the target scan. The scan uses it
 * to decline Spark's runtime group filter when it reads no other data column: the filter's
 * subquery would read those same columns of every fragment only to choose which fragments to read
 * them from again. The plan is not changed.
 */
object ConditionColumnsRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreach {
      case w: WriteDelta => RowLevelPlans.targetRead(w).foreach { read =>
        val target = read.relation.outputSet
        val referenced = w.query.flatMap {
          case f: Filter => f.condition.references.toSeq
          case j: Join => j.condition.toSeq.flatMap(_.references.toSeq)
          case _ => Nil
        }
        read.operation.conditionColumns = Some(referenced.filter(target.contains).map(_.name).toSet)
      }
      case _ =>
    }
    plan
  }
}
