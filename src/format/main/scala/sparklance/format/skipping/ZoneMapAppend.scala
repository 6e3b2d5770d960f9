package sparklance.format.skipping

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.Snapshot

/**
 * Zone map segments for the fragments a write adds, committed with them: one segment a column,
 * under that column's index name, covering exactly the new fragments. With `fold` (a compaction)
 * the column's zone map instead becomes one segment holding the zones its segments keep for the
 * fragments left and those of the new fragments, replacing its segments in the same version.
 *
 * @param columns per column: the index name, the field id, its Arrow type, its zone size, and the zones of the
 *                new fragments, whose `fragmentId` is the fragment's position among them (their
 *                ids are assigned only at commit)
 */
final class ZoneMapAppend(storage: Storage, tablePath: String, columns: Seq[ZoneMapAppend.Column], fold: Boolean = false)
    extends NewFragmentIndices {

  override def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata] =
    if (ids.isEmpty) Nil
    else {
      val allocator = new RootAllocator()
      try columns.map { c =>
        ZoneMapSegment.create(storage, tablePath, c.indexName, c.fieldId, c.arrowType,
          c.zones.map(z => z.copy(fragmentId = ids(z.fragmentId.toInt))), ids, readVersion, c.rowsPerZone, allocator)
      } finally allocator.close()
    }

  override def landing(ids: Seq[Long], base: Option[Snapshot], current: Seq[IndexMetadata], live: Set[Long]): NewFragmentIndices.Landing =
    if (!fold || ids.isEmpty || base.isEmpty) super.landing(ids, base, current, live)
    else {
      val read = base.get
      val allocator = new RootAllocator()
      val written = scala.collection.mutable.ArrayBuffer.empty[IndexMetadata]
      try {
        val replaced = columns.flatMap { c =>
          val mine = current.filter(i => i.getName == c.indexName && ZoneMapSegment.isZoneMap(i) &&
            i.getFieldsList.asScala.map(_.intValue) == Seq(c.fieldId))
          val (kept, covered) = ZoneMapFold.zonesOf(storage, read.files, mine, live -- ids, c.arrowType, allocator)
          val fresh = c.zones.map(z => z.copy(fragmentId = ids(z.fragmentId.toInt)))
          written += ZoneMapSegment.create(storage, tablePath, c.indexName, c.fieldId, c.arrowType,
            (kept ++ fresh).sortBy(z => (z.fragmentId, z.start)), (covered ++ ids).toSeq.sorted, read.version, c.rowsPerZone, allocator)
          mine
        }
        NewFragmentIndices.Landing(written.toSeq, replaced)
      } catch { case e: Throwable => discard(written.toSeq); throw e }
      finally allocator.close()
    }

  override def discard(segments: Seq[IndexMetadata]): Unit = segments.foreach(ZoneMapSegment.discard(storage, tablePath, _))
}

object ZoneMapAppend {
  final case class Column(indexName: String, fieldId: Int, arrowType: ArrowType, rowsPerZone: Long, zones: Seq[Zone])
}
