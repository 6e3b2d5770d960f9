package sparklance.format.skipping

import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.commit.{CommitRecord, CommitRetries, Statement}
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.{BasePaths, Dataset, Snapshot}

/**
 * Folds the segments of zone map indices into one each. Every write of a table with zone maps
 * adds a segment per column, and a scan reads each segment's file: after years of appends a
 * column would have thousands. The zones the segments hold for the fragments they cover that
 * still exist are written as one segment per index, and all the indices folded at once are
 * committed as one CreateIndex that replaces their segments (one version, however many columns
 * have zone maps); no data file is read. A concurrent write's new segment under the same name is
 * left beside the fold.
 */
object ZoneMapFold {
  /** What a fold committed: per index folded, how many segments it replaced; and the version. */
  final case class Folded(segments: Map[String, Int], version: Long)

  /** The zone map indices of `snapshot` with at least `atLeast` (>= 2) segments. */
  def candidates(snapshot: Snapshot, atLeast: Int): Seq[String] =
    zoneMaps(snapshot).groupBy(_.getName).collect { case (name, segments) if segments.size >= math.max(2, atLeast) => name }
      .toSeq.sorted

  private def zoneMaps(snapshot: Snapshot): Seq[IndexMetadata] =
    Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}").filter(ZoneMapSegment.isZoneMap)

  /**
   * Folds the segments of each index of `names` in `read`, in one commit recorded as `statement`'s;
   * an index with fewer than two segments on one column of a type zone maps are read for is left
   * as it is. None when no index was folded.
   */
  def fold(dataset: Dataset, read: Snapshot, names: Seq[String], commitRetries: CommitRetries,
      statement: Statement = Statement.FoldZoneMaps): Option[Folded] = {
    val allocator = new RootAllocator()
    val planned = scala.collection.mutable.ArrayBuffer.empty[(String, IndexMetadata, Seq[IndexMetadata])]
    try {
      try names.foreach(name => folded(dataset, read, name, allocator).foreach { case (entry, old) => planned += ((name, entry, old)) })
      catch { case e: Throwable =>
        // Segments written for a commit that will not be made: nothing names them.
        planned.foreach(p => ZoneMapSegment.discard(dataset.storage, dataset.path, p._2))
        throw e
      }
      if (planned.isEmpty) None
      else {
        val committed = ZoneMapSegment.commit(dataset, read, planned.map(_._2).toSeq, planned.flatMap(_._3).toSeq, commitRetries,
          CommitRecord(statement))
        Some(Folded(planned.map(p => p._1 -> p._3.size).toMap, committed.version))
      }
    } finally allocator.close()
  }

  /** The folded segment of index `name` in `read` (written, not committed) and the segments it replaces. */
  private def folded(dataset: Dataset, read: Snapshot, name: String, allocator: RootAllocator): Option[(IndexMetadata, Seq[IndexMetadata])] = {
    val segments = zoneMaps(read).filter(_.getName == name)
    val fieldIds = segments.map(_.getFieldsList.asScala.map(_.intValue).toSeq).distinct
    val field = fieldIds match {
      case Seq(Seq(id)) => read.schema.allFields.find(_.id == id).filter(f => ZoneValues.supports(f))
      case _ => None
    }
    if (segments.size < 2 || field.isEmpty) return None
    val (zones, covered) = zonesOf(dataset.storage, read.files, segments, read.fragments.map(_.getId).toSet, field.get.arrowType, allocator)
    val rowsPerZone = ZoneMapSegment.zoneSize(segments)
    val entry = ZoneMapSegment.create(dataset.storage, dataset.path, name, field.get.id, field.get.arrowType,
      zones.sortBy(z => (z.fragmentId, z.start)), covered.toSeq.sorted, read.version, rowsPerZone, allocator)
    Some(entry -> segments)
  }

  /**
   * The zones `segments` (of one zone map, bounds of `columnType`, files found through `files`)
   * hold for the fragments of `live` they cover, and those fragments. A fragment two segments both
   * claim (an index refresh can leave that) keeps one's zones; a segment with bounds of another
   * type gives none, so its fragments stay unindexed rather than be described wrongly.
   */
  def zonesOf(storage: Storage, files: BasePaths, segments: Seq[IndexMetadata], live: Set[Long], columnType: ArrowType,
      allocator: BufferAllocator): (Seq[Zone], Set[Long]) = {
    var covered = Set.empty[Long]
    val zones = segments.flatMap { segment =>
      val claims = Indices.coverage(segment).map(_.toArray.map(Integer.toUnsignedLong).toSet).getOrElse(Set.empty) -- covered
      val mine = claims.filter(live)
      ZoneMapSegment.read(storage, files, segment, columnType, allocator) match {
        case Some(all) => covered ++= mine; all.filter(z => mine(z.fragmentId))
        case None => Nil
      }
    }
    (zones, covered)
  }
}
