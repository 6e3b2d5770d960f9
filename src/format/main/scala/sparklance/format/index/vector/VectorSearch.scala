package sparklance.format.index.vector

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.complex.FixedSizeListVector
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.{LanceException, Resources}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.rowids.{RowIdIndex, RowLineage}
import sparklance.format.table.{FragmentScanner, LanceField, RowAddress, Snapshot}

/**
 * Nearest-neighbour search of the vector column `column` of one table version, answering as
 * pylance 14's `nearest` does (LANCE-VECTOR-INDICES.md §6, §9): each segment of the chosen IVF
 * index ranks its own centroids and scores its probed partitions from its stored codes; deleted
 * rows, rows of fragments the segment does not cover (any more) and rows the filter rejects are
 * skipped before the top k; the segments' candidates are merged; with a refine factor, or when some
 * fragments are not covered, the candidates' raw vectors and every row of the uncovered fragments
 * are scored exactly before the final top k.
 *
 * Segments are leased from `cache` (opened on a miss) and given back at `close`, so that the next
 * VectorSearch of the table finds them opened, their probed partitions decoded; deletion vectors
 * and the row id index (stable row ids) are kept for the next search of this version until
 * `close`. Not thread-safe (one VectorSearch per thread; the cache is shared).
 */
final class VectorSearch(storage: Storage, val snapshot: Snapshot, val column: String, allocator: BufferAllocator,
    cache: VectorIndexCache = VectorIndexCache.shared) extends AutoCloseable {
  val field: LanceField = snapshot.schema.field(column).getOrElse(
    throw new LanceException(s"Lance table ${snapshot.tablePath} version ${snapshot.version} has no column '$column'"))
  val dim: Int = VectorIndexSegment.dimension(field)

  private val entries: Seq[IndexMetadata] = VectorIndexSegment.entries(snapshot, field.id)
  private val fragments: Map[Long, DataFragment] = snapshot.fragments.map(f => f.getId -> f).toMap
  private val opened = mutable.Map.empty[String, Seq[VectorIndexSegment]]

  /** The index a query would use: the first by manifest order whose metric is the query's (any, without one). */
  private def chosen(metric: Option[VectorMetric]): Option[Seq[IndexMetadata]] = {
    val names = entries.map(_.getName).distinct
    names.map(n => entries.filter(_.getName == n))
      .find(segs => metric.forall(_ == VectorIndexSegment.detailsMetric(segs.head)))
  }

  /** How a query with this metric (None: the index's) would run. */
  def plan(metric: Option[VectorMetric], useIndex: Boolean = true): VectorSearchPlan =
    (if (useIndex) chosen(metric) else None) match {
      case Some(segs) =>
        val covered = sparklance.format.index.Indices.coverage(segs, fragments.keys)
        val opened = segments(segs.head.getName)
        VectorSearchPlan(Some(segs.head.getName), Some(opened.head.indexType), opened.head.metric, segs.size,
          snapshot.fragments.map(_.getId).filterNot(id => covered.contains(id.toInt)))
      case None => VectorSearchPlan(None, None, metric.getOrElse(VectorMetric.L2), 0, snapshot.fragments.map(_.getId))
    }

  private def segments(name: String): Seq[VectorIndexSegment] = opened.getOrElseUpdate(name, {
    val built = mutable.ArrayBuffer.empty[VectorIndexSegment]
    try entries.filter(_.getName == name).foreach { e =>
      built += cache.acquire(snapshot.tablePath, e)(VectorIndexSegment.open(storage, snapshot, e, field))
    } catch {
      case t: Throwable => built.foreach(s => try cache.release(s) catch { case e: Throwable => t.addSuppressed(e) }); throw t
    }
    built.toSeq
  })

  // Of this version, kept for the next search: deletion vectors of the fragments met, the row id
  // index of a stable-row-id table, the row ids of uncovered fragments.
  private lazy val live = new Liveness
  private val stableIds = mutable.Map.empty[Long, Option[Array[Long]]]

  private final class Liveness {
    private val deleted = mutable.Map.empty[Long, RoaringBitmap]
    lazy val rowIdIndex: Option[RowIdIndex] = if (snapshot.stableRowIds) Some(RowLineage.index(storage, snapshot)) else None

    def deletions(fragment: Long): RoaringBitmap =
      deleted.getOrElseUpdate(fragment, DeletionFiles.read(storage, snapshot.files, fragments(fragment)))

    /** The address of the live row the index names `rowId`, or -1 when it is gone or elsewhere than `covered`. */
    def address(rowId: Long, covered: RoaringBitmap): Long = rowIdIndex match {
      case Some(index) =>
        val a = index.address(rowId) // -1 for a deleted row; deletions are already applied
        if (a != -1L && covered.contains(RowAddress.fragmentId(a).toInt)) a else -1L
      case None =>
        val f = RowAddress.fragmentId(rowId)
        if (f > Int.MaxValue || !covered.contains(f.toInt) || deletions(f).contains(RowAddress.offset(rowId).toInt)) -1L else rowId
    }
  }

  def search(query: VectorQuery): VectorSearchResult = {
    if (query.column != column) throw new IllegalArgumentException(s"A query of column '${query.column}' to a search of '$column'")
    if (query.vector.length != dim)
      throw new LanceException(s"The query vector has ${query.vector.length} dimensions; column '$column' has $dim")
    val plan = this.plan(query.metric, query.useIndex)
    val accept: Long => Boolean = query.filter.getOrElse(_ => true)
    val refine = query.refineFactor
    val exactStage = refine.isDefined || plan.uncoveredFragments.nonEmpty
    var searched = 0
    val candidates: IndexedSeq[VectorHit] = plan.index match {
      case None => IndexedSeq.empty
      case Some(name) =>
        val top = new TopHits(query.k * refine.getOrElse(1))
        val existing = new RoaringBitmap()
        fragments.keys.foreach(id => existing.add(id.toInt))
        for (segment <- segments(name)) {
          val covered = segment.coverage.fold(existing.clone())(c => RoaringBitmap.and(c, existing))
          val q = if (segment.metric == VectorMetric.Cosine) VectorMetric.normalized(query.vector) else query.vector
          val ranked = segment.rank(q)
          val (first, most) = query.nprobes match {
            case Some(n) => (math.min(n, ranked.length), math.min(n, ranked.length))
            case None => (AutoProbes.count(segment.metric, query.k, ranked.map(_._2)), ranked.length)
          }
          var probed = 0
          var kept = 0
          // Late expansion (Auto only): more partitions while fewer than k rows survived.
          while (probed < first || (probed < most && kept < query.k)) {
            val (ids, distances) = segment.scan(q, ranked(probed)._1, allocator)
            var i = 0
            while (i < ids.length) {
              val id = ids(i)
              val address = live.address(id, covered)
              if (address != -1L && accept(id)) { top.offer(id, address, distances(i)); kept += 1 }
              i += 1
            }
            probed += 1
          }
          searched += probed
        }
        top.result
    }
    val hits =
      if (!exactStage) candidates.take(query.k)
      else exact(query, plan, candidates, accept)
    VectorSearchResult(hits, plan, searched)
  }

  /**
   * The k nearest of the index's candidates and of every live row of the uncovered fragments that
   * the filter accepts, by exact distance (pylance's KNNVectorDistance after the index).
   */
  private def exact(query: VectorQuery, plan: VectorSearchPlan, candidates: Seq[VectorHit],
      accept: Long => Boolean): IndexedSeq[VectorHit] = {
    val metric = plan.metric
    val top = new TopHits(query.k)
    // The candidates' rows, by fragment: offset -> row id as the index stores it.
    val byFragment = mutable.Map.empty[Long, mutable.Map[Int, Long]]
    candidates.foreach(h => byFragment.getOrElseUpdate(RowAddress.fragmentId(h.address), mutable.Map.empty)(RowAddress.offset(h.address).toInt) = h.rowId)
    for ((fragmentId, rows) <- byFragment) {
      val only = new RoaringBitmap()
      rows.keys.foreach(only.add)
      val f = fragments(fragmentId)
      scanVectors(new FragmentScanner(storage, snapshot.files, f, Seq(field), allocator, 0, f.getPhysicalRows, only = Some(only)))(
        (offset, x, at) => top.offer(rows(offset), RowAddress.of(fragmentId, offset), metric.distance(query.vector, x, at)))
    }
    for (fragmentId <- plan.uncoveredFragments)
      scanFragment(fragmentId, accept)((id, address, x, at) => top.offer(id, address, metric.distance(query.vector, x, at)))
    top.result
  }

  /**
   * Every live row of fragment `fragmentId` whose id (as an index stores it: the row address, or
   * the stable row id) `accept`s and whose vector is not null, as (row id, row address, floats,
   * start of the vector in them); with `whole`, vectors with a null element are left out too.
   * The floats are reused for the next batch: `each` copies what it keeps.
   */
  def scanFragment(fragmentId: Long, accept: Long => Boolean, whole: Boolean = false)(each: (Long, Long, Array[Float], Int) => Unit): Unit = {
    val f = fragments(fragmentId)
    val ids = stableIds.getOrElseUpdate(fragmentId,
      if (snapshot.stableRowIds) RowLineage.rowIds(storage, snapshot.tablePath, f) else None)
    scanVectors(new FragmentScanner(storage, snapshot.files, f, Seq(field), allocator, 0, f.getPhysicalRows), whole) { (offset, x, at) =>
      val address = RowAddress.of(fragmentId, offset)
      val id = ids.fold(address)(_(offset))
      if (accept(id)) each(id, address, x, at)
    }
  }

  /**
   * Every non-null vector the scanner reads (with `whole`, of no null element), as (physical
   * offset, floats, start of the vector in them).
   */
  private def scanVectors(scanner: FragmentScanner, whole: Boolean = false)(each: (Int, Array[Float], Int) => Unit): Unit =
    try scanner.foreach { batch =>
      try {
        val v = batch.vectors.head.asInstanceOf[FixedSizeListVector]
        val data = v.getDataVector
        val buf = data.getDataBuffer
        val x = new Array[Float](batch.numRows * dim)
        var i = 0
        while (i < x.length) { x(i) = buf.getFloat(i.toLong * 4); i += 1 }
        val partial = whole && data.getNullCount > 0
        var r = 0
        while (r < batch.numRows) {
          if (!v.isNull(r) && !(partial && (r * dim until (r + 1) * dim).exists(data.isNull))) each(batch.offsets(r), x, r * dim)
          r += 1
        }
      } finally batch.close()
    } finally scanner.close()

  def close(): Unit = {
    val leased = opened.values.flatten.toSeq
    opened.clear()
    Resources.closeAll(leased.map(s => (() => cache.release(s)): AutoCloseable))
  }
}
