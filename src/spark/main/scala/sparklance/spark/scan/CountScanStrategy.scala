package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation

/**
 * Plans `SELECT count(*) FROM t` answered from metadata ([[LanceCountScan]]) as the rows
 * themselves: Spark names the pushed count through a Project of aliases, and a Project over a
 * local scan is compiled and run as a job (about 100-150 ms on a busy machine, for one number),
 * while a local scan alone is collected on the driver. The scan stays in the logical plan, so
 * the statement's reads are what they were (see [[StatementReads]]).
 */
object CountScanStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case Project(list, scan: DataSourceV2ScanRelation) if scan.scan.isInstanceOf[LanceCountScan] =>
      val positions = list.map(e => unaliased(e).map(a => scan.output.indexWhere(_.exprId == a.exprId)))
      if (positions.exists(p => p.forall(_ < 0))) Nil
      else {
        val row = scan.scan.asInstanceOf[LanceCountScan].rows().head
        val projected = InternalRow.fromSeq(positions.map(p => row.get(p.get, scan.output(p.get).dataType)))
        // Planned by Spark's own strategy: LocalTableScanExec's constructor differs between Spark 4.2 and 4.3.
        planLater(LocalRelation(plan.output, Seq(projected))) :: Nil
      }
    case _ => Nil
  }

  /** The scan's column an expression only renames. */
  private def unaliased(e: Expression): Option[Attribute] = e match {
    case Alias(child, _) => unaliased(child)
    case a: Attribute => Some(a)
    case _ => None
  }
}
