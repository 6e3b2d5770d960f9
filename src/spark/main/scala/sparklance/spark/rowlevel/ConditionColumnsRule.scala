package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, MergeRows, Project, WriteDelta}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.catalyst.rules.Rule
import sparklance.spark.scan.Prefilter

/**
 * Tells a DELETE / UPDATE / MERGE on a sparklance table which target columns its conditions read
 * (filters, and the MERGE join's condition), before Spark builds the target scan. The scan uses it
 * to decline Spark's runtime group filter when it reads no other data column: the filter's
 * subquery would read those same columns of every fragment only to choose which fragments to read
 * them from again. It also tells which target columns the statement reads at all, other than
 * passing a row's value through unchanged (see [[LanceDeltaOperation.valueColumns]]), and the
 * condition the scan can evaluate first ([[LanceDeltaOperation.prefilter]]). The plan is not changed.
 */
object ConditionColumnsRule extends Rule[LogicalPlan] with PredicateHelper {
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
        read.operation.prefilter = prefilter(w, read)
        read.operation.valueColumns = Some(w.query.flatMap(reads).filter(target.contains).map(_.name).toSet)
      }
      case _ =>
    }
    plan
  }

  /**
   * The conjuncts of the filter on the target's read that the scan can evaluate itself, on columns
   * of plain types, before it reads the others ([[sparklance.spark.scan.Prefilter]]): rows they
   * reject never pass the filter, whatever the rest of the plan does. None where the target is read
   * more than once (a row one read drops, another might need).
   */
  private def prefilter(w: WriteDelta, read: RowLevelPlans.TargetRead): Option[Expression] = {
    val target = read.relation.outputSet
    val filters = w.query.collect { case f: Filter if f.child eq read.relation => f }
    if (filters.size != 1 || w.query.collect { case r if r eq read.relation => r }.size != 1) None
    else splitConjunctivePredicates(filters.head.condition).filter(Prefilter.evaluable(_, target)).reduceOption(And)
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
