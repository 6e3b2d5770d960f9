package sparklance.format.maintenance

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.index.{Indices, RewriteIndexRules}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.table.Snapshot

/**
 * Lance's compaction planner (LANCE-MAINTENANCE.md §1.2), so that a table compacts the same way
 * whichever library runs it: walk the fragments in manifest order; a fragment with more than the
 * threshold of its rows deleted is rewritten even alone, a fragment smaller than the target only
 * with neighbours; runs of candidates covered by the same indices form bins; bins are cut into
 * tasks of at least the target's rows; budgets keep a prefix of the tasks. With
 * [[CompactionOptions.wholeBins]] every fragment is a candidate and each bin is one task.
 */
object CompactionPlanner {
  /** What the planner knows of a fragment. */
  final case class FragmentStats(fragment: DataFragment, deletedRows: Long) {
    def id: Long = fragment.getId
    def physicalRows: Long = fragment.getPhysicalRows
    def liveRows: Long = physicalRows - deletedRows
  }

  private sealed trait Candidacy
  private case object CompactItself extends Candidacy
  private case object CompactWithNeighbours extends Candidacy

  private final class Bin(val indexSet: Set[Int]) {
    val members = ArrayBuffer.empty[(FragmentStats, Candidacy)]
    def isNoop: Boolean = members.isEmpty || (members.size == 1 && members.head._2 == CompactWithNeighbours)
  }

  def plan(snapshot: Snapshot, storage: Storage, options: CompactionOptions): CompactionPlan = {
    // Rewriting rows rewrites every column: not one sparklance cannot decode and encode again.
    snapshot.schema.fields.find(_.opaque).foreach { f =>
      return CompactionPlan(snapshot.version, Nil, snapshot.fragments.map(fragment =>
        LeftAlone(fragment.getId, s"column '${f.name}' has Lance type ${f.logicalType}, which sparklance cannot rewrite")))
    }
    val stats = snapshot.fragments.map(f => FragmentStats(f, f.getPhysicalRows - snapshot.liveRows(storage, f)))
    plan(snapshot.version, stats, Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}"),
      snapshot.stableRowIds, options)
  }

  def plan(readVersion: Long, fragments: Seq[FragmentStats], indices: Seq[IndexMetadata], stableRowIds: Boolean,
      options: CompactionOptions): CompactionPlan = {
    val coverage = indices.map(i => (i, Indices.kind(i), Indices.coverage(i)))
    def covers(c: Option[org.roaringbitmap.RoaringBitmap], id: Long) = c.forall(_.contains(id.toInt))
    val leftAlone = ArrayBuffer.empty[LeftAlone]
    val bins = ArrayBuffer.empty[Bin]
    var current: Option[Bin] = None
    def close(): Unit = { current.foreach(bins += _); current = None }

    for (f <- fragments) {
      val blockers = coverage.collect { case (i, kind, c) if RewriteIndexRules.blocksRewrite(kind, stableRowIds) && covers(c, f.id) => i }
      val candidacy =
        if (options.wholeBins) Some(CompactItself)
        else if (options.materializes && f.physicalRows > 0 &&
            f.deletedRows.toFloat / f.physicalRows.toFloat > options.materializeDeletionsThreshold.toFloat) Some(CompactItself)
        else if (f.physicalRows < options.targetRowsPerFragment) Some(CompactWithNeighbours)
        else None
      if (options.excludedFragmentIds(f.id)) close()
      else if (blockers.nonEmpty) {
        // Excluded fragments end a bin, as in Lance: rows never jump over a fragment left in place.
        if (candidacy.isDefined) leftAlone += LeftAlone(f.id, s"covered by index ${blockers.map(Indices.describe).mkString(", ")}, " +
          "which sparklance cannot remap")
        close()
      } else candidacy match {
        case None => close()
        case Some(c) =>
          val indexSet = coverage.zipWithIndex.collect {
            case ((_, kind, cov), pos) if RewriteIndexRules.bindsGroups(kind) && covers(cov, f.id) => pos
          }.toSet
          if (current.exists(_.indexSet != indexSet)) close()
          if (current.isEmpty) current = Some(new Bin(indexSet))
          current.get.members += f -> c
      }
    }
    close()

    val target = options.targetRowsPerFragment
    val tasks = bins.filterNot(b => if (options.wholeBins) b.members.isEmpty else b.isNoop)
      .flatMap(b => if (options.wholeBins) Seq(b.members.map(_._1).toSeq) else splitForSize(b.members.map(_._1).toSeq, target))
      .map(fs => CompactionTask(fs.map(_.fragment), fs.map(_.liveRows).sum, target))
    CompactionPlan(readVersion, withinBudgets(tasks.toSeq, options), leftAlone.toSeq)
  }

  /**
   * Cuts a bin into runs of at least `target` live rows, as long as what remains could form
   * another such run; the remainder joins the last run rather than stand alone small.
   */
  private def splitForSize(members: Seq[FragmentStats], target: Long): Seq[Seq[FragmentStats]] = {
    val out = ArrayBuffer.empty[Seq[FragmentStats]]
    var remainingRows = members.map(_.liveRows).sum
    var run = ArrayBuffer.empty[FragmentStats]
    var runRows = 0L
    for (m <- members) {
      run += m; runRows += m.liveRows; remainingRows -= m.liveRows
      if (runRows >= target && remainingRows > 0 && remainingRows >= target) {
        out += run.toSeq; run = ArrayBuffer.empty; runRows = 0
      }
    }
    if (run.nonEmpty) out += run.toSeq
    out.toSeq
  }

  /** The longest prefix of tasks whose source fragments, live rows and bytes stay within every budget. */
  private def withinBudgets(tasks: Seq[CompactionTask], options: CompactionOptions): Seq[CompactionTask] = {
    var fragments, rows, bytes = 0L
    tasks.takeWhile { t =>
      fragments += t.fragments.size
      rows += t.liveRows
      bytes += t.fragments.map(f => f.getFilesList.asScala.map(_.getFileSizeBytes).sum).sum
      options.maxSourceFragments.forall(fragments <= _) && options.maxSourceRows.forall(rows <= _) &&
        options.maxSourceBytes.forall(bytes <= _)
    }
  }
}
