package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.Tags
import sparklance.spark.LanceCatalog

/** `CALL lance.system.delete_tag(table => 'db.t', tag => 'v1-release')`: the version it named may then be vacuumed. */
final class DeleteTagProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = DeleteTagProcedure.Name
  override def description(): String = "Removes a tag from a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("tag", StringType, required = true))

  override def resultSchema: StructType = CreateTagProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val tag = new Tags(table(args, 0).dataset).delete(args.getUTF8String(1).toString)
    InternalRow(UTF8String.fromString(tag.name), tag.version)
  }
}

object DeleteTagProcedure {
  val Name = "delete_tag"
}
