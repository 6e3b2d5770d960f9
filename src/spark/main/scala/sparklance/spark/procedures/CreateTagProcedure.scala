package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.Tags
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.create_tag(table => 'db.t', tag => 'v1-release', version => 3)`: names a
 * version (the newest when none is given) in pylance's layout, for `VERSION AS OF 'v1-release'`,
 * `restore(tag => ...)`, and to keep it through vacuum.
 */
final class CreateTagProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CreateTagProcedure.Name
  override def description(): String = "Names a version of a table with a tag"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("tag", StringType, required = true), param("version", LongType))

  override def resultSchema: StructType = CreateTagProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val version = optional(args, 2)(args.getLong).getOrElse(target.dataset.latestVersion)
    target.dataset.checkVersion(version)
    val tag = new Tags(target.dataset).create(args.getUTF8String(1).toString, version)
    InternalRow(UTF8String.fromString(tag.name), tag.version)
  }
}

object CreateTagProcedure {
  val Name = "create_tag"
  val Result: StructType = StructType(Seq(StructField("tag", StringType, nullable = false),
    StructField("version", LongType, nullable = false)))
}
