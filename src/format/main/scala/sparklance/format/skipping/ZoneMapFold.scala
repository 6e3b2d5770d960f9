package sparklance.format.skipping

import org.apache.arrow.memory.RootAllocator
import scala.jdk.CollectionConverters._
import sparklance.format.commit.CommitRetries
import sparklance.format.index.Indices
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Folds the segments of a zone map index into one. Every write of a table with `zonemap_columns`
 * adds a segment per column, and a scan reads each segment's file: after years of appends a
 * column would have thousands. The zones the segments hold for the fragments they cover that
 * still exist are written as one segment, committed as a CreateIndex that replaces them; no data
 * file is read. A concurrent write's new segment under the same name is left beside the fold.
 */
object ZoneMapFold {
  /** What a fold committed: the index, how many segments it replaced, and the version. */
  final case class Folded(name: String, segments: Int, version: Long)

  /** The zone map indices of `snapshot` with at least `atLeast` (>= 2) segments. */
  def candidates(snapshot: Snapshot, atLeast: Int): Seq[String] =
    zoneMaps(snapshot).groupBy(_.getName).collect { case (name, segments) if segments.size >= math.max(2, atLeast) => name }
      .toSeq.sorted

  private def zoneMaps(snapshot: Snapshot): Seq[IndexMetadata] =
    Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}").filter(ZoneMapSegment.isZoneMap)

  /**
   * Folds the segments of index `name` in `read`; None when it has fewer than two on one column
   * of a type zone maps are read for.
   */
  def fold(dataset: Dataset, read: Snapshot, name: String, commitRetries: CommitRetries): Option[Folded] = {
    val segments = zoneMaps(read).filter(_.getName == name)
    val fieldIds = segments.map(_.getFieldsList.asScala.map(_.intValue).toSeq).distinct
    val field = fieldIds match {
      case Seq(Seq(id)) => read.schema.allFields.find(_.id == id).filter(f => ZoneValues.supports(f))
      case _ => None
    }
    if (segments.size < 2 || field.isEmpty) return None
    val existing = read.fragments.map(_.getId).toSet
    val allocator = new RootAllocator()
    try {
      // A fragment two segments both claim (an index refresh can leave that) keeps one's zones.
      var covered = Set.empty[Long]
      val zones = segments.flatMap { segment =>
        val claims = Indices.coverage(segment).map(_.toArray.map(Integer.toUnsignedLong).toSet).getOrElse(Set.empty) -- covered
        val mine = claims.filter(existing)
        ZoneMapSegment.read(dataset.storage, read.files, segment, field.get.arrowType, allocator) match {
          case Some(all) => covered ++= mine; all.filter(z => mine(z.fragmentId))
          // Bounds of another type: its fragments stay unindexed rather than be described wrongly.
          case None => Nil
        }
      }
      val rowsPerZone = ZoneMapSegment.zoneSize(segments)
      val entry = ZoneMapSegment.create(dataset.storage, dataset.path, name, field.get.id, field.get.arrowType,
        zones.sortBy(z => (z.fragmentId, z.start)), covered.toSeq.sorted, read.version, rowsPerZone, allocator)
      val committed = ZoneMapSegment.commit(dataset, read, Seq(entry), segments, commitRetries)
      Some(Folded(name, segments.size, committed.version))
    } finally allocator.close()
  }
}
