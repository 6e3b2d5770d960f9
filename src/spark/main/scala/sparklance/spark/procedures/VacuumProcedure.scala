package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.maintenance.{Cleanup, CleanupFileKind, CleanupPolicy, Durations}
import sparklance.spark.LanceCatalog

/**
 * `CALL lance.system.vacuum(table => 'db.t', older_than => '7 days', retain_versions => 5,
 * dry_run => true, delete_unverified, error_if_tagged_old_versions)`: pylance's
 * `cleanup_old_versions` (see [[Cleanup]]). With neither `older_than` nor `retain_versions`,
 * versions older than 14 days go, as in Lance. `dry_run` lists what would go and deletes nothing;
 * it does not fail on tagged old versions but lists their tags (`tags_in_the_way`).
 */
final class VacuumProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = VacuumProcedure.Name
  override def description(): String = "Removes old versions of a table and the files only they need"

  override def parameters(): Array[ProcedureParameter] = Array(
    param("table", StringType, required = true), param(CleanupPolicy.OlderThan, StringType),
    param(CleanupPolicy.RetainVersions, IntegerType), param("dry_run", BooleanType),
    param(CleanupPolicy.DeleteUnverified, BooleanType), param(CleanupPolicy.ErrorIfTaggedOldVersions, BooleanType))

  override def resultSchema: StructType = VacuumProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val olderThan = optional(args, 1)(p => Durations.parse(CleanupPolicy.OlderThan, args.getUTF8String(p).toString))
    val retain = optional(args, 2)(args.getInt)
    val policy = CleanupPolicy(
      // pylance's cleanup_old_versions: with no filter, versions older than 14 days.
      olderThan = if (olderThan.isEmpty && retain.isEmpty) Some(CleanupPolicy.DefaultOlderThan) else olderThan,
      retainVersions = retain,
      deleteUnverified = optional(args, 4)(args.getBoolean).getOrElse(false),
      errorIfTaggedOldVersions = optional(args, 5)(args.getBoolean).getOrElse(true))
    val dryRun = optional(args, 3)(args.getBoolean).getOrElse(false)
    val r = new Cleanup(target.dataset).run(policy, dryRun)
    def count(kind: CleanupFileKind) = r.count(kind).toLong
    InternalRow(r.readVersion, r.oldestVersion, r.removedVersions.size.toLong, count(CleanupFileKind.Data),
      count(CleanupFileKind.Deletion), count(CleanupFileKind.Transaction), count(CleanupFileKind.Index), r.bytesRemoved,
      r.failedDeletes.size.toLong, dryRun, new GenericArrayData(r.files.map(f => UTF8String.fromString(f.path)).toArray),
      new GenericArrayData(r.tagsInTheWay.map(UTF8String.fromString).toArray))
  }
}

object VacuumProcedure {
  val Name = "vacuum"
  val Result: StructType = StructType(Seq(
    StructField("read_version", LongType, nullable = false), StructField("oldest_version", LongType, nullable = false),
    StructField("old_versions", LongType, nullable = false), StructField("data_files_removed", LongType, nullable = false),
    StructField("deletion_files_removed", LongType, nullable = false),
    StructField("transaction_files_removed", LongType, nullable = false),
    StructField("index_files_removed", LongType, nullable = false), StructField("bytes_removed", LongType, nullable = false),
    StructField("failed_deletes", LongType, nullable = false), StructField("dry_run", BooleanType, nullable = false),
    StructField("files", ArrayType(StringType, containsNull = false), nullable = false),
    // Tags of old versions the policy selects, which stay ("name (version v)"); a real run with
    // error_if_tagged_old_versions (the default) fails on them, a dry run lists them here.
    StructField("tags_in_the_way", ArrayType(StringType, containsNull = false), nullable = false)))
}
