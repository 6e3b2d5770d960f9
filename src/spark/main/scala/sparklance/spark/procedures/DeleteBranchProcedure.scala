package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.Branches
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.delete_branch(table => 'db.t', branch => 'dev')`: deletes the branch and the
 * files written on it; the version it was made from may then be vacuumed. A branch others were made
 * from is refused.
 */
final class DeleteBranchProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = DeleteBranchProcedure.Name
  override def description(): String = "Deletes a branch of a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("branch", StringType, required = true))

  override def resultSchema: StructType = CreateBranchProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val branch = new Branches(table(args, 0).dataset).delete(args.getUTF8String(1).toString)
    InternalRow(UTF8String.fromString(branch.name), branch.parentBranch.map(UTF8String.fromString).orNull, branch.parentVersion)
  }
}

object DeleteBranchProcedure {
  val Name = "delete_branch"
}
