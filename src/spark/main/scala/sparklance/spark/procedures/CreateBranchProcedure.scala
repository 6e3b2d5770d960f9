package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.Branches
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.create_branch(table => 'db.t', branch => 'dev', version => 3)`: makes branch
 * `dev` from a version of `db.t` (the newest when none is given) in pylance's layout; it is then
 * read and written as `lance.db.t.branch_dev`. `table => 'db.t.branch_dev'` branches from that branch.
 */
final class CreateBranchProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CreateBranchProcedure.Name
  override def description(): String = "Makes a branch of a table from one of its versions"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("branch", StringType, required = true), param("version", LongType))

  override def resultSchema: StructType = CreateBranchProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val source = table(args, 0).dataset
    val version = optional(args, 2)(args.getLong).getOrElse(source.latestVersion)
    source.checkVersion(version)
    val branch = new Branches(source).create(args.getUTF8String(1).toString, source, version)
    InternalRow(UTF8String.fromString(branch.name), branch.parentBranch.map(UTF8String.fromString).orNull, branch.parentVersion)
  }
}

object CreateBranchProcedure {
  val Name = "create_branch"
  val Result: StructType = StructType(Seq(StructField("branch", StringType, nullable = false),
    StructField("parent_branch", StringType), StructField("parent_version", LongType, nullable = false)))
}
