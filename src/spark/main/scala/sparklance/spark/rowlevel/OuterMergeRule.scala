package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.plans.{FullOuter, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, WriteDelta}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Tells a MERGE on a sparklance table, before Spark builds its write, that its rows come from an
 * outer join keeping every source row (the plan of a WHEN NOT MATCHED clause). Spark shuffles both
 * sides of such a join (it cannot broadcast the side it keeps), and adaptive execution coalesces
 * the join's output into partitions of its advisory size; clustering the write by fragment would
 * shuffle the joined rows a second time, only to gather each fragment's deletions in one task,
 * which the driver does anyway when it merges the tasks' bitmaps. The plan is not changed.
 */
object OuterMergeRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreach {
      case w: WriteDelta => RowLevelPlans.targetRead(w).foreach { read =>
        read.operation.outerJoined = w.query.exists {
          case j: Join => j.joinType == RightOuter || j.joinType == FullOuter
          case _ => false
        }
      }
      case _ =>
    }
    plan
  }
}
