package sparklance.format.index.scalar

import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{UInt4Vector, UInt8Vector}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.io.Storage
import sparklance.format.skipping.{BTreeSegment, ZoneValue, ZoneValues}
import sparklance.format.table.LanceSchema

/**
 * Writes the two files of a BTREE segment (docs/format-scalar-indices.md) from entries added in
 * key order (nulls first): `page_data.lance` (`values`, `ids` = row addresses), cut into pages of
 * `zoneSize` rows, and on [[finish]] `page_lookup.lance`, one row a page: its first and last value,
 * its null count and its number; metadata `batch_size` = zoneSize, `range_partitioned = false`.
 */
final class BTreeIndexFiles(storage: Storage, tablePath: String, val uuid: UUID, valueType: ArrowType, zoneSize: Int,
    allocator: BufferAllocator) {
  require(zoneSize > 0, s"zone_size must be positive, got $zoneSize")
  private def field(name: String, t: ArrowType, nullable: Boolean) = new Field(name, new FieldType(nullable, t, null), null)
  private val u32 = new ArrowType.Int(32, false)
  private val dir = Storage.join(tablePath, s"_indices/$uuid")
  private val dataArrow = new Schema(Seq(field("values", valueType, nullable = true), field("ids", new ArrowType.Int(64, false), nullable = false)).asJava)
  private val data = new FileWriter21(storage.create(Storage.join(dir, BTreeSegment.DataFile)), LanceSchema.fromArrow(dataArrow), minor = 2)
  private val page = ArrayBuffer.empty[(Option[ZoneValue], Long)]
  private val pages = ArrayBuffer.empty[(Option[ZoneValue], Option[ZoneValue], Long)]
  private var last = Option.empty[(Option[ZoneValue], Long)]

  def add(value: Option[ZoneValue], address: Long): Unit = {
    last.foreach(l => require(ScalarKeyOrdering.withAddress.lteq(l, value -> address), s"BTREE entries out of order: $value after ${l._1}"))
    last = Some(value -> address)
    page += value -> address
    if (page.size == zoneSize) flushPage()
  }

  private def flushPage(): Unit = if (page.nonEmpty) {
    data.writeRows(dataArrow, page.size, allocator) { case Seq(values, ids: UInt8Vector) =>
      page.zipWithIndex.foreach { case ((v, a), i) => ZoneValues.set(values, i, v); ids.setSafe(i, a) }
    }
    pages += ((page.head._1, page.last._1, page.count(_._1.isEmpty).toLong))
    page.clear()
  }

  /** Finishes both files; returns their names and sizes, as the manifest lists them. */
  def finish(): Seq[(String, Long)] = {
    flushPage()
    val dataSize = data.finish().sizeBytes
    val arrow = new Schema(Seq(field("min", valueType, nullable = true), field("max", valueType, nullable = true),
      field("null_count", u32, nullable = false), field("page_idx", u32, nullable = false)).asJava)
    val schema = LanceSchema.fromArrow(arrow).copy(metadata =
      Map("batch_size" -> zoneSize.toString, "range_partitioned" -> "false").map { case (k, v) => k -> v.getBytes(UTF_8) })
    val lookup = new FileWriter21(storage.create(Storage.join(dir, BTreeSegment.LookupFile)), schema, minor = 2)
    lookup.writeRows(arrow, pages.size, allocator) { case Seq(min, max, nulls: UInt4Vector, index: UInt4Vector) =>
      pages.zipWithIndex.foreach { case ((first, lastValue, nullCount), i) =>
        ZoneValues.set(min, i, first); ZoneValues.set(max, i, lastValue)
        nulls.setSafe(i, Math.toIntExact(nullCount)); index.setSafe(i, i)
      }
    }
    val lookupSize = lookup.finish().sizeBytes
    Seq(BTreeSegment.LookupFile -> lookupSize, BTreeSegment.DataFile -> dataSize)
  }
}

object BTreeIndexFiles {
  /** pylance's default page size (its `zone_size` option). */
  val DefaultZoneSize = 4096
}
