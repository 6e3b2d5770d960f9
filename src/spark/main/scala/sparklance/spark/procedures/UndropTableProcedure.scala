package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.undrop_table(table => 'db.t')`: brings back a table that DROP TABLE (without
 * PURGE) dropped, on every store: from the trash (local disks, HDFS; the newest copy), or dropped
 * in place (object stores). Returns the table and its latest version.
 */
final class UndropTableProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = UndropTableProcedure.Name
  override def description(): String = "Brings back a table dropped with its files kept"

  override def parameters(): Array[ProcedureParameter] = Array(param("table", StringType, required = true))

  override def resultSchema: StructType =
    StructType(Seq(StructField("table", StringType, nullable = false), StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val (ident, quotedName) = identifier(args, 0)
    val dataset = catalog.undrop(ident)
    InternalRow(UTF8String.fromString(quotedName), dataset.latestVersion)
  }
}

object UndropTableProcedure {
  val Name = "undrop_table"
}
