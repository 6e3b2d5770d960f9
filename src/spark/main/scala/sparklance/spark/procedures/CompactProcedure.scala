package sparklance.spark.procedures

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import sparklance.format.maintenance.{Compaction, CompactionOptions}
import sparklance.spark.{LanceCatalog, LanceTable}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.maintenance.{AutoCleanup, DistributedCompaction, PostCommit}

/**
 * `CALL lance.system.compact(table => 'db.t', target_rows_per_fragment, materialize_deletions,
 * materialize_deletions_threshold, max_source_fragments, where)`: pylance's `compact_files`, run
 * as a Spark job. Options not given come from the table's `lance.compaction.*` config, then
 * pylance's defaults. `where` limits it to fragments matching a predicate on `_fragid`. Each zone
 * map of the columns it rewrites becomes one segment in the Rewrite's own version.
 */
final class CompactProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CompactProcedure.Name
  override def description(): String = "Rewrites small fragments and fragments with many deleted rows into fragments of the target size"

  private val options = Seq(
    CompactionOptions.TargetRowsPerFragment -> LongType, CompactionOptions.MaterializeDeletions -> BooleanType,
    CompactionOptions.MaterializeDeletionsThreshold -> DoubleType, CompactionOptions.MaxSourceFragments -> LongType)

  override def parameters(): Array[ProcedureParameter] =
    (param("table", StringType, required = true) +: options.map { case (n, t) => param(n, t) } :+ param("where", StringType)).toArray

  override def resultSchema: StructType = CompactProcedure.Result

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val explicit = options.zipWithIndex.flatMap { case ((n, t), i) =>
      optional(args, i + 1)(p => args.get(p, t).toString).map(n -> _)
    }.toMap
    val snapshot = target.dataset.snapshot()
    val resolved = CompactionOptions.resolve(explicit, snapshot.config)
    val scoped = optional(args, options.size + 1)(args.getUTF8String(_).toString).fold(resolved) { where =>
      val ids = snapshot.fragments.map(_.getId)
      resolved.copy(excludedFragmentIds = resolved.excludedFragmentIds ++ (ids.toSet -- matching(ids, where)))
    }
    val result = new Compaction(target.dataset, DistributedCompaction.runner(spark, target.quotedName, catalog.settingsForTasks),
      indexing = ZoneMapMaintenance.forCompaction(target.quotedName, target.dataset))
      .run(scoped)
    // The Rewrite's version folds the zone maps of the columns it wrote (ZoneMapAppend); a compaction
    // with nothing to rewrite commits nothing at all, so `version` is null exactly when the table did not move.
    PostCommit(target.quotedName, result.version.getOrElse(result.readVersion)) {
      AutoCleanup.afterCommits(target.dataset, target.quotedName, snapshot.config, result.version.map(result.readVersion -> _).toSeq)
    }.run()
    InternalRow(result.readVersion, result.version.map(Long.box).orNull, result.fragmentsRemoved.toLong,
      result.fragmentsAdded.toLong, result.filesRemoved.toLong, result.filesAdded.toLong, result.rowsRewritten,
      result.replanned.toLong, new GenericArrayData(result.leftAlone.map(l => UTF8String.fromString(s"fragment ${l.fragmentId}: ${l.reason}")).toArray))
  }

  /** The fragment ids for which `where` (a predicate on `_fragid`) holds, evaluated by Spark itself. */
  private def matching(ids: Seq[Long], where: String): Set[Long] = {
    val frame = spark.createDataFrame(ids.map(id => Row(id.toInt)).asJava,
      StructType(Seq(StructField(LanceTable.FragmentId, IntegerType, nullable = false))))
    frame.where(where).collect().map(_.getInt(0).toLong).toSet
  }
}

object CompactProcedure {
  val Name = "compact"
  val Result: StructType = StructType(Seq(
    StructField("read_version", LongType, nullable = false), StructField("version", LongType),
    StructField("fragments_removed", LongType, nullable = false), StructField("fragments_added", LongType, nullable = false),
    StructField("files_removed", LongType, nullable = false), StructField("files_added", LongType, nullable = false),
    StructField("rows_rewritten", LongType, nullable = false), StructField("groups_replanned", LongType, nullable = false),
    StructField("left_alone", ArrayType(StringType, containsNull = false), nullable = false)))
}
