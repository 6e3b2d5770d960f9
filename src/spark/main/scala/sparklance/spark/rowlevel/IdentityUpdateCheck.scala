package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{Alias, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, WriteDelta}
import org.apache.spark.sql.catalyst.util.RowDeltaUtils
import sparklance.spark.IdentityViolationException
import sparklance.spark.errors.LanceErrors

/**
 * Refuses, once the statement is analysed, an UPDATE that assigns a GENERATED ALWAYS identity
 * column of a sparklance table. Spark rewrites an UPDATE into a row-level write whose updated rows
 * are a projection of the operation, then a value per table column: a value that is not the
 * column itself is an assignment. (Spark 4.3 may rewrite the statement within the analyser
 * iteration that resolves it, so the resolved UpdateTable is not always there to read.) MERGE's
 * updates are checked when its write is planned (see [[LanceDeltaBatchWrite]]).
 */
object IdentityUpdateCheck extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case w: WriteDelta => for (table <- RowLevelPlans.lanceTable(w.originalTable) if table.identityColumns.exists(_.always)) {
      val columns = w.originalTable.output
      w.query.foreach {
        case p: Project if p.projectList.headOption.exists(isUpdate) =>
          val values = p.projectList.slice(1, 1 + columns.size)
          for ((value, column) <- values.zip(columns) if !unaliased(value).semanticEquals(column);
               c <- table.identityColumns.find(c => c.always && c.name.equalsIgnoreCase(column.name)))
            throw LanceErrors.convert(new IdentityViolationException(table.tableName, c.name,
              "the column is GENERATED ALWAYS AS IDENTITY, and the statement updates it; its values cannot change"))
        case _ =>
      }
    }
    case _ =>
  }

  private def unaliased(e: org.apache.spark.sql.catalyst.expressions.Expression) = e match {
    case a: Alias => a.child
    case other => other
  }

  private def isUpdate(e: org.apache.spark.sql.catalyst.expressions.NamedExpression): Boolean = e match {
    case Alias(Literal(op: Int, _), name) => name == RowDeltaUtils.OPERATION_COLUMN && op == RowDeltaUtils.UPDATE_OPERATION
    case _ => false
  }
}
