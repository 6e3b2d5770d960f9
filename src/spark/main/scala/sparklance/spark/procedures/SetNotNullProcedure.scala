package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.TableChange
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.{LanceCatalog, LanceTable}

/**
 * `CALL lance.system.set_not_null(table => 'db.t', column => 'id')` (or `columns => array('id', 's.b')`):
 * makes existing columns NOT NULL, which Spark's analyzer refuses as `ALTER COLUMN ... SET NOT NULL`.
 * The data is checked first (a column holding NULLs is refused, naming how many), then one Lance
 * Project commit marks the fields non-nullable, as pylance sees them. Returns the new version.
 */
final class SetNotNullProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = SetNotNullProcedure.Name
  override def description(): String = "Makes columns NOT NULL after checking that they hold no NULL"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("column", StringType), param("columns", ArrayType(StringType)))

  override def resultSchema: StructType = StructType(Seq(StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val names = optional(args, 1)(args.getUTF8String).map(_.toString).toSeq ++
      optional(args, 2)(args.getArray).toSeq.flatMap(a => (0 until a.numElements()).map(a.getUTF8String(_).toString))
    if (names.isEmpty) throw new IllegalArgumentException(
      s"Procedure $name of ${target.quotedName}: name the column (column => 'c') or columns (columns => array('a', 'b'))")
    // Column paths as SQL writes them: `s`.`b` or s.b, a quoted name for one with a dot.
    val changes = names.map(n => TableChange.updateColumnNullability(spark.sessionState.sqlParser.parseMultipartIdentifier(n).toArray, false))
    val altered = catalog.alterTable(target.ident, changes: _*).asInstanceOf[LanceTable]
    InternalRow(altered.snapshot.version)
  }
}

object SetNotNullProcedure {
  val Name = "set_not_null"
}
