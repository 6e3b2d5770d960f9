package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.maintenance.Durations
import sparklance.spark.{CatalogSettings, LanceCatalog}

/**
 * `CALL lance.system.empty_trash(older_than => '1 day')`: deletes the files of every table DROP
 * TABLE dropped (to the trash, or in place on object stores) more than `older_than` ago; by
 * default the catalog's `trash_retention`, which DROP TABLE also applies to its namespace.
 * Returns the paths deleted.
 */
final class EmptyTrashProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = EmptyTrashProcedure.Name
  override def description(): String = s"Deletes tables dropped longer ago than older_than (default: the catalog's ${CatalogSettings.TrashRetention})"

  override def parameters(): Array[ProcedureParameter] = Array(param(EmptyTrashProcedure.OlderThan, StringType))

  override def resultSchema: StructType =
    StructType(Seq(StructField("deleted", ArrayType(StringType, containsNull = false), nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val olderThan = optional(args, 0)(p => Durations.parse(EmptyTrashProcedure.OlderThan, args.getUTF8String(p).toString))
      .getOrElse(catalog.settingsForTasks.trashRetention)
    InternalRow(new GenericArrayData(catalog.emptyTrash(olderThan).map(UTF8String.fromString).toArray))
  }
}

object EmptyTrashProcedure {
  val Name = "empty_trash"
  val OlderThan = "older_than"
}
