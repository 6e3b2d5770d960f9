package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.purge_dropped_table(table => 'db.t')`: deletes the files of a table that DROP
 * TABLE (without PURGE) dropped on an object store, freeing its name; it also finishes a
 * `DROP TABLE ... PURGE` that was cut short there. A live table is refused: that is DROP TABLE ... PURGE.
 */
final class PurgeDroppedTableProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = PurgeDroppedTableProcedure.Name
  override def description(): String = "Deletes the files of a table dropped with its files kept"

  override def parameters(): Array[ProcedureParameter] = Array(param("table", StringType, required = true))

  override def resultSchema: StructType =
    StructType(Seq(StructField("table", StringType, nullable = false), StructField("path", StringType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0, dropped = true)
    target.dataset.storage.deleteRecursively(target.dataset.path)
    InternalRow(UTF8String.fromString(target.quotedName), UTF8String.fromString(target.dataset.path))
  }
}

object PurgeDroppedTableProcedure {
  val Name = "purge_dropped_table"
}
