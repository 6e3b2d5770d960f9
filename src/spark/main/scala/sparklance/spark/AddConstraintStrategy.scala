package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{AddCheckConstraint, LogicalPlan}
import org.apache.spark.sql.connector.catalog.{Identifier, TableChange}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2ScanRelation, LeafV2CommandExec}

/**
 * `ALTER TABLE t ADD CONSTRAINT c CHECK (expr)` on a sparklance table goes straight to the
 * catalog, which counts the violating rows itself and refuses the constraint naming it and their
 * count ([[ConstraintAlteration]]); Spark's own plan would look for one violating row first and
 * fail without naming the constraint. (Without the session extension Spark does that, then the
 * catalog checks again.)
 */
object AddConstraintStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case a: AddCheckConstraint => a.child.collectFirst {
      case d: DataSourceV2ScanRelation if d.relation.table.isInstanceOf[LanceTable] => d.relation
    }.flatMap(r => r.catalog.collect { case c: LanceCatalog => c }.zip(r.identifier).map { case (catalog, ident) =>
      AddConstraintExec(catalog, ident, TableChange.addConstraint(a.checkConstraint.toV2Constraint, r.table.version()))
    }).toSeq
    case _ => Nil
  }
}

/** Adds a constraint through the catalog, which checks the table's rows against it. */
final case class AddConstraintExec(catalog: LanceCatalog, ident: Identifier, change: TableChange) extends LeafV2CommandExec {
  override def output: Seq[Attribute] = Nil
  override protected def run(): Seq[InternalRow] = {
    catalog.alterTable(ident, change)
    Nil
  }
}
