package sparklance.format.skipping

import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.io.{Background, Storage}
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.Snapshot

/**
 * Zone map segments for the fragments a write adds, committed with them: one segment a column,
 * under that column's index name, covering exactly the new fragments. A column whose zone map
 * would reach `foldAt` segments with this one (a compaction folds at 2, writes at 16) instead
 * becomes one segment holding the zones its segments keep for the fragments left and those of the
 * new fragments, replacing its segments in the same version: folding needs no version of its own.
 *
 * @param columns per column: the index name, the field id, its Arrow type, its zone size, and the zones of the
 *                new fragments, whose `fragmentId` is the fragment's position among them (their
 *                ids are assigned only at commit)
 */
final class ZoneMapAppend(storage: Storage, tablePath: String, columns: Seq[ZoneMapAppend.Column], foldAt: Int = Int.MaxValue)
    extends NewFragmentIndices {

  override def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata] =
    if (ids.isEmpty) Nil
    else perColumn[IndexMetadata](identity) { (c, allocator) =>
      ZoneMapSegment.create(storage, tablePath, c.indexName, c.fieldId, c.arrowType, fresh(c, ids), ids, readVersion, c.rowsPerZone,
        allocator)
    }

  override def landing(ids: Seq[Long], base: Option[Snapshot], current: Seq[IndexMetadata], live: Set[Long]): NewFragmentIndices.Landing =
    if (ids.isEmpty || base.isEmpty) super.landing(ids, base, current, live)
    else {
      val read = base.get
      val written = perColumn[(IndexMetadata, Seq[IndexMetadata])](_._1) { (c, allocator) =>
        val mine = current.filter(i => i.getName == c.indexName && ZoneMapSegment.isZoneMap(i) &&
          i.getFieldsList.asScala.map(_.intValue) == Seq(c.fieldId))
        val folding = mine.size + 1 >= foldAt
        val (kept, covered) =
          if (folding) ZoneMapFold.zonesOf(storage, read.files, mine, live -- ids, c.arrowType, allocator) else (Nil, Set.empty[Long])
        ZoneMapSegment.create(storage, tablePath, c.indexName, c.fieldId, c.arrowType,
          (kept ++ fresh(c, ids)).sortBy(z => (z.fragmentId, z.start)), (covered ++ ids).toSeq.sorted, read.version,
          c.rowsPerZone, allocator) -> (if (folding) mine else Nil)
      }
      NewFragmentIndices.Landing(written.map(_._1), written.flatMap(_._2))
    }

  /**
   * `write` of every column, whose result holds the segment it wrote (`segment`). The columns'
   * files are written side by side where the store answers slowly (a PUT each on S3, which one
   * after the other were most of a small commit's time); should one fail, the others' files are
   * removed.
   */
  private def perColumn[T](segment: T => IndexMetadata)(write: (ZoneMapAppend.Column, BufferAllocator) => T): Seq[T] = {
    val allocator = new RootAllocator()
    try Background.all(columns.map(c => storage.inBackground(tablePath)(() => write(c, allocator))))(w => discard(Seq(segment(w))))
    finally allocator.close()
  }

  /** The zones of `c` in the new fragments, under their ids. */
  private def fresh(c: ZoneMapAppend.Column, ids: Seq[Long]): Seq[Zone] = c.zones.map(z => z.copy(fragmentId = ids(z.fragmentId.toInt)))

  override def discard(segments: Seq[IndexMetadata]): Unit = segments.foreach(ZoneMapSegment.discard(storage, tablePath, _))
}

object ZoneMapAppend {
  final case class Column(indexName: String, fieldId: Int, arrowType: ArrowType, rowsPerZone: Long, zones: Seq[Zone])
}
