package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import sparklance.format.maintenance.Restore
import sparklance.format.table.Tags
import sparklance.spark.{LanceCatalog, LanceTable}
import sparklance.spark.maintenance.{AutoCleanup, PostCommit}

/**
 * `CALL lance.system.restore(table => 'db.t', version => 3)`, `(..., timestamp => TIMESTAMP '...')`
 * or `(..., tag => 'release')`: commits a Lance Restore, as pylance's `restore`: the chosen
 * version's rows, schema, config and indices become the newest version. Exactly one of version,
 * timestamp and tag.
 */
final class RestoreProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = RestoreProcedure.Name
  override def description(): String = "Makes an earlier version of a table its newest version"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("version", LongType), param("timestamp", TimestampType),
      param("tag", StringType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("restored_version", LongType, nullable = false), StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    // Time travel's own lookups, so restore names versions and times exactly as VERSION / TIMESTAMP AS OF do.
    val chosen = (optional(args, 1)(args.getLong), optional(args, 2)(args.getLong), optional(args, 3)(args.getUTF8String)) match {
      case (Some(v), None, None) => catalog.loadTable(target.ident, v.toString)
      case (None, Some(micros), None) => catalog.loadTable(target.ident, micros)
      case (None, None, Some(tag)) => catalog.loadTable(target.ident, new Tags(target.dataset).versionOf(tag.toString).toString)
      case _ => throw new IllegalArgumentException(
        s"Procedure restore of ${target.quotedName}: give exactly one of version, timestamp and tag")
    }
    val restored = chosen.asInstanceOf[LanceTable].snapshot
    val Restore.Result(read, committed) = Restore.run(target.dataset, restored, catalog.settingsForTasks.commitRetries)
    PostCommit(target.quotedName, committed.version)(
      AutoCleanup.afterCommits(target.dataset, target.quotedName, read.config, Seq(read.version -> committed.version))).run()
    InternalRow(restored.version, committed.version)
  }
}

object RestoreProcedure {
  val Name = "restore"
}
