package sparklance.spark

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.analysis.{ResolvedFieldName, ResolvedTable}
import org.apache.spark.sql.catalyst.plans.logical.{AlterColumnSpec, AlterColumns, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.{Identifier, TableChange}
import org.apache.spark.sql.execution.command.LeafRunnableCommand

/**
 * `ALTER TABLE t ALTER COLUMN c SET NOT NULL` on a sparklance table: Spark's analyzer refuses it
 * ("Cannot change nullable column to non-nullable") before any catalog sees it. With sparklance's
 * session extension such a statement (one that only tightens columns) becomes [[SetNotNull]],
 * which does what `CALL system.set_not_null` does: the data is checked, then one commit.
 */
object SetNotNullRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case a: AlterColumns if a.specs.nonEmpty && a.specs.forall(onlyTightens) => a.table match {
      case t: ResolvedTable if t.catalog.isInstanceOf[LanceCatalog] =>
        SetNotNull(t.catalog.asInstanceOf[LanceCatalog], t.identifier, a.specs.map(_.column.asInstanceOf[ResolvedFieldName].name))
      case _ => plan
    }
    case _ => plan
  }

  private def onlyTightens(s: AlterColumnSpec): Boolean = s.column.isInstanceOf[ResolvedFieldName] &&
    s.newNullability.contains(false) && s.newDataType.isEmpty && s.newComment.isEmpty && s.newPosition.isEmpty &&
    s.newDefaultExpression.isEmpty
}

/** Makes `columns` (paths) of a table NOT NULL through the catalog, which checks the data first. */
final case class SetNotNull(catalog: LanceCatalog, ident: Identifier, columns: Seq[Seq[String]]) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] = {
    catalog.alterTable(ident, columns.map(c => TableChange.updateColumnNullability(c.toArray, false)): _*)
    // Cached plans of the table hold its old schema.
    val name = (catalog.name() +: ident.namespace() :+ ident.name()).map(p => s"`${p.replace("`", "``")}`").mkString(".")
    spark.catalog.refreshTable(name)
    Nil
  }
}
