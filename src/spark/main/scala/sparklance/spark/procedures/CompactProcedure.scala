package sparklance.spark.procedures

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import sparklance.format.InvalidOptionException
import sparklance.format.maintenance.{Compaction, CompactionOptions}
import sparklance.format.table.Snapshot
import sparklance.spark.{LanceCatalog, LanceTable, SparkTypes}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.layout.{Clustering, Curve, LayoutRewrite, RowLayout}
import sparklance.spark.maintenance.{AutoCleanup, DistributedCompaction, PostCommit}

/**
 * `CALL lance.system.compact(table => 'db.t', target_rows_per_fragment, materialize_deletions,
 * materialize_deletions_threshold, max_source_fragments, where, sort_by, zorder_by, recluster)`:
 * pylance's `compact_files`, run as a Spark job, with Delta's and Iceberg's layouts: rows sorted
 * or Z-ordered across the rewritten fragments (see [[layout]]). Options not given come from the table's `lance.compaction.*` config, then
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
    (param("table", StringType, required = true) +: options.map { case (n, t) => param(n, t) } :+ param("where", StringType) :+
      param(CompactProcedure.SortBy, StringType) :+ param(CompactProcedure.ZOrderBy, StringType) :+
      param(CompactProcedure.Recluster, BooleanType)).toArray

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
    val (layout, whole) = this.layout(args, target, snapshot)
    val result = new Compaction(target.dataset, DistributedCompaction.runner(spark, target.quotedName, catalog.settingsForTasks, layout), indexing = ZoneMapMaintenance.forCompaction(target.quotedName, target.dataset))
      .run(scoped.copy(wholeBins = whole))
    // The Rewrite's version folds the zone maps of the columns it wrote (ZoneMapAppend); a compaction
    // with nothing to rewrite commits nothing at all, so `version` is null exactly when the table did not move.
    PostCommit(target.quotedName, result.version.getOrElse(result.readVersion)) {
      AutoCleanup.afterCommits(target.dataset, target.quotedName, snapshot.config, result.version.map(result.readVersion -> _).toSeq)
    }.run()
    InternalRow(result.readVersion, result.version.map(Long.box).orNull, result.fragmentsRemoved.toLong,
      result.fragmentsAdded.toLong, result.filesRemoved.toLong, result.filesAdded.toLong, result.rowsRewritten,
      result.replanned.toLong, new GenericArrayData(result.leftAlone.map(l => UTF8String.fromString(s"fragment ${l.fragmentId}: ${l.reason}")).toArray))
  }

  /**
   * How the rewrite orders rows, and whether it rewrites every fragment (`wholeBins`): `sort_by` or
   * `zorder_by` lay out all fragments once that way; `recluster => true` lays out all fragments by
   * the table's clustering columns; otherwise a clustered table's compaction orders each task's
   * rows by them, and any other table's keeps their order.
   */
  private def layout(args: InternalRow, target: LanceProcedure.Target, snapshot: Snapshot): (Option[RowLayout], Boolean) = {
    val at = options.size + 2
    def columns(position: Int) = optional(args, position)(args.getUTF8String(_).toString).map(RowLayout.names)
    val requested = Seq(columns(at).map(c => CompactProcedure.SortBy -> RowLayout.Linear(c)),
      columns(at + 1).map(c => CompactProcedure.ZOrderBy -> RowLayout.Curved(Curve.ZOrder, c))).flatten
    val recluster = optional(args, at + 2)(args.getBoolean).getOrElse(false)
    if (requested.size > 1) throw new InvalidOptionException(CompactProcedure.ZOrderBy, s"give ${CompactProcedure.SortBy} or ${CompactProcedure.ZOrderBy}, not both")
    val clustered = Clustering.layout(snapshot.config)
    requested.headOption match {
      case Some((name, layout)) =>
        LayoutRewrite.unusable(target.quotedName, SparkTypes.toSpark(snapshot.schema, target.quotedName), layout.columns)
          .foreach(why => throw new InvalidOptionException(name, why))
        (Some(layout), true)
      case None if recluster && clustered.isEmpty => throw new InvalidOptionException(CompactProcedure.Recluster,
        s"${target.quotedName} has no clustering columns: ALTER TABLE ... CLUSTER BY (columns) first, or give ${CompactProcedure.ZOrderBy}")
      case None => (clustered, recluster)
    }
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
  val SortBy = "sort_by"
  val ZOrderBy = "zorder_by"
  val Recluster = "recluster"
  val Result: StructType = StructType(Seq(
    StructField("read_version", LongType, nullable = false), StructField("version", LongType),
    StructField("fragments_removed", LongType, nullable = false), StructField("fragments_added", LongType, nullable = false),
    StructField("files_removed", LongType, nullable = false), StructField("files_added", LongType, nullable = false),
    StructField("rows_rewritten", LongType, nullable = false), StructField("groups_replanned", LongType, nullable = false),
    StructField("left_alone", ArrayType(StringType, containsNull = false), nullable = false)))
}
