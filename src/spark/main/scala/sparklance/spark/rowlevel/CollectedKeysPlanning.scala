package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{InSubqueryExec, SparkPlan, SubqueryAdaptiveBroadcastExec, SubqueryExec}

/**
 * Plans the dynamic pruning subqueries [[KeyPruningSubquery.collected]] builds as a plain collect of
 * their keys. Adaptive execution plans a dynamic pruning subquery that reuses no broadcast as an
 * aggregate of the distinct keys: a shuffle, two more jobs before the target's scan can start
 * (about 80 ms of a 0.7 s MERGE). The scan's filter holds each key once anyway
 * ([[sparklance.spark.scan.KeySetFilter]]), and the keys are few (the source is small, see
 * [[SourceSize.small]]): collecting them as they are is one job, or none for local rows.
 *
 * A query stage preparation rule (sparklance's session extension): it runs before adaptive
 * execution's own planning of these subqueries, which happens as stages are made. Without
 * adaptive execution Spark plans them with their aggregate, as before.
 */
object CollectedKeysPlanning extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = plan.transformAllExpressions {
    case in: InSubqueryExec => in.plan match {
      case s: SubqueryAdaptiveBroadcastExec if collected(s) => in.withNewPlan(SubqueryExec(s.name, s.child))
      case _ => in
    }
  }

  /** Whether `s` gathers the one column of a plan [[KeyPruningSubquery.collected]] built. */
  private def collected(s: SubqueryAdaptiveBroadcastExec): Boolean = s.buildKeys match {
    case Seq(key: Attribute) => key.name == KeyPruningSubquery.CollectedKey && s.child.output.map(_.exprId) == Seq(key.exprId)
    case _ => false
  }
}
