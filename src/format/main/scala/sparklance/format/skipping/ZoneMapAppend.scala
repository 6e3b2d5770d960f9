package sparklance.format.skipping

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * Zone map segments for the fragments a write adds, committed with them: one segment a column,
 * under that column's index name, covering exactly the new fragments.
 *
 * @param columns per column: the index name, the field id, its Arrow type, its zone size, and the zones of the
 *                new fragments, whose `fragmentId` is the fragment's position among them (their
 *                ids are assigned only at commit)
 */
final class ZoneMapAppend(storage: Storage, tablePath: String, columns: Seq[ZoneMapAppend.Column]) extends NewFragmentIndices {

  override def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata] =
    if (ids.isEmpty) Nil
    else {
      val allocator = new RootAllocator()
      try columns.map { c =>
        ZoneMapSegment.create(storage, tablePath, c.indexName, c.fieldId, c.arrowType,
          c.zones.map(z => z.copy(fragmentId = ids(z.fragmentId.toInt))), ids, readVersion, c.rowsPerZone, allocator)
      } finally allocator.close()
    }

  override def discard(segments: Seq[IndexMetadata]): Unit = segments.foreach(ZoneMapSegment.discard(storage, tablePath, _))
}

object ZoneMapAppend {
  final case class Column(indexName: String, fieldId: Int, arrowType: ArrowType, rowsPerZone: Long, zones: Seq[Zone])
}
