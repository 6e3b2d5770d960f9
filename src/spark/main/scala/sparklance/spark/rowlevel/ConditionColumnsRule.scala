package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, MergeRows, Project, WriteDelta}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Tells a DELETE / UPDATE / MERGE on a sparklance table which target columns its conditions read
 * (filters, and the MERGE join's condition), before Spark builds the target scan. The scan uses it
 * to decline Spark's runtime group filter when it reads no other data column: the filter's
 * subquery would read those same columns of every fragment only to choose which fragments to read
 * them from again. It also tells which target columns the statement reads at all, other than
 * passing a row's value through unchanged (see [[LanceDeltaOperation.valueColumns]]). The plan is
 * not changed.
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
        read.operation.valueColumns = Some(w.query.flatMap(reads).filter(target.contains).map(_.name).toSet)
      }
      case _ =>
    }
    plan
  }

  /** The attributes a node computes with: all it references, except values it only passes on. */
  private def reads(node: LogicalPlan): Seq[Attribute] = node match {
    case _: DataSourceV2Relation => Nil
    case p: Project => p.projectList.flatMap(computed)
    // A MERGE instruction's first child is its condition, the others the values of its output rows.
    case m: MergeRows => m.expressions.flatMap(i => i.children.headOption.toSeq.flatMap(_.references) ++ i.children.drop(1).flatMap(computed))
    case other => other.expressions.flatMap(_.references)
  }

  private def computed(e: Expression): Seq[Attribute] = e match {
    case _: Attribute | Alias(_: Attribute, _) => Nil
    case other => other.references.toSeq
  }
}
