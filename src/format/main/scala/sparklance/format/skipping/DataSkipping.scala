package sparklance.format.skipping

import org.apache.arrow.memory.BufferAllocator
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.ColumnFilter._
import sparklance.format.table.LanceSchema

/**
 * Which rows of a snapshot's fragments a filter may keep, by the table's ZONEMAP indices
 * (LANCE-SCALAR-INDICES.md §2, §6): a fragment an index covers is read only on the spans of the
 * zones the filter cannot rule out; a fragment no index covers is read whole.
 *
 * An index's zones are used only for fragments that both exist and are in its fragment bitmap:
 * zones a segment still holds for fragments since rewritten, or covered by another segment, are
 * ignored. Segments of one index (one name) cover disjoint fragments and are used together.
 */
final class DataSkipping(storage: Storage, tablePath: String, schema: LanceSchema, indices: Seq[IndexMetadata],
    fragments: Seq[DataFragment], allocator: BufferAllocator) {

  private val physicalRows: Map[Long, Long] = fragments.map(f => f.getId -> f.getPhysicalRows).toMap

  /** Zones by fragment of the field's zone map, for the fragments it covers; None without one. */
  private def zonesOf(fieldId: Int): Option[Map[Long, Seq[Zone]]] = {
    val field = schema.allFields.find(_.id == fieldId).filter(f => ZoneValues.supports(f.arrowType))
    val onField = indices.filter(i => ZoneMapSegment.isZoneMap(i) && i.getFieldsList.asScala.map(_.intValue) == Seq(fieldId))
    for {
      f <- field
      name <- onField.headOption.map(_.getName)
      covered = onField.filter(_.getName == name).flatMap { segment =>
        val coverage = Indices.coverage(segment).map(_.toArray.map(Integer.toUnsignedLong).filter(physicalRows.contains).toSet)
          .getOrElse(Set.empty[Long])
        if (coverage.isEmpty) Nil
        else DataSkipping.zones(storage, tablePath, segment, f.arrowType, allocator).fold(Seq.empty[(Long, Seq[Zone])]) { zones =>
          val byFragment = zones.filter(z => coverage(z.fragmentId)).groupBy(_.fragmentId)
          coverage.toSeq.map(id => id -> byFragment.getOrElse(id, Nil))
        }
      }
      if covered.nonEmpty
    } yield covered.toMap
  }

  /**
   * For each fragment the filter lets skip rows of, the physical offsets that may hold matching
   * rows (empty when none can); fragments absent from the result are read whole.
   */
  def candidates(filter: ColumnFilter): Map[Long, RoaringBitmap] = {
    val plain = negationFree(filter)
    val zones = ColumnFilter.fieldIds(plain).toSeq.flatMap(id => zonesOf(id).map(id -> _)).toMap
    if (zones.isEmpty) Map.empty
    else physicalRows.keys.flatMap(id => rows(plain, id, zones).map(id -> _)).toMap
  }

  /** The offsets of fragment `id` that may match; None for all of them. */
  private def rows(filter: ColumnFilter, id: Long, zones: Map[Int, Map[Long, Seq[Zone]]]): Option[RoaringBitmap] =
    filter match {
      case And(l, r) => (rows(l, id, zones), rows(r, id, zones)) match {
        case (Some(a), Some(b)) => Some(RoaringBitmap.and(a, b))
        case (a, b) => a.orElse(b)
      }
      case Or(l, r) => for (a <- rows(l, id, zones); b <- rows(r, id, zones)) yield RoaringBitmap.or(a, b)
      case leaf => ColumnFilter.fieldId(leaf).flatMap(zones.get).flatMap(_.get(id)).map { fragmentZones =>
        val kept = new RoaringBitmap()
        val limit = physicalRows(id)
        fragmentZones.filter(ZoneTest.mightMatch(_, leaf)).foreach(z => kept.add(z.start, math.min(z.end, limit)))
        kept
      }
    }
}

object DataSkipping {
  private val cacheSize = 256
  // Index files never change once written: a segment's zones are read once per process.
  private val cache = java.util.Collections.synchronizedMap(new java.util.LinkedHashMap[String, Option[IndexedSeq[Zone]]](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[String, Option[IndexedSeq[Zone]]]): Boolean = size() > cacheSize
  })

  private def zones(storage: Storage, tablePath: String, segment: IndexMetadata, columnType: org.apache.arrow.vector.types.pojo.ArrowType,
      allocator: BufferAllocator): Option[IndexedSeq[Zone]] = {
    val key = s"$tablePath/_indices/${Indices.directory(segment)}|$columnType"
    Option(cache.get(key)).getOrElse {
      val read = ZoneMapSegment.read(storage, tablePath, segment, columnType, allocator)
      cache.put(key, read)
      read
    }
  }
}
