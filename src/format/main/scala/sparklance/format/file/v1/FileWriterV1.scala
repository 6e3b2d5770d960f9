package sparklance.format.file.v1

import java.io.{BufferedOutputStream, OutputStream}
import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import sparklance.format.{BuildInfo, UnsupportedFeatureException}
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.proto.FileProtos.Metadata
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.table.{LanceField, LanceSchema, StorageVersion}

/**
 * Writes a legacy (V1, 0.2) data file as pylance 14 does for tables of `data_storage_version`
 * "legacy" (docs/format-v1-files.md): batches of at most [[FileWriterV1.BatchRows]] rows, one
 * page per field per batch, then the page table, the file's schema and the metadata. V1 has no
 * validity: a null is written as pylance writes it (0, false, an empty string, list or binary).
 */
final class FileWriterV1(out: OutputStream, schema: LanceSchema) {
  import FileWriterV1._

  private val sink = new BufferedOutputStream(out, 1 << 16)
  private var position = 0L
  private val pages = mutable.Map.empty[(Int, Int), (Long, Long)]
  private val batchOffsets = mutable.ArrayBuffer(0)
  private def batch = batchOffsets.size - 1

  private def put(bytes: Array[Byte]): Unit = { sink.write(bytes); position += bytes.length }

  /** Appends rows; `vectors` follow `schema.fields`. */
  def write(vectors: Seq[FieldVector]): Unit = {
    val n = if (vectors.isEmpty) 0 else vectors.head.getValueCount
    var start = 0
    while (start < n) {
      val count = math.min(BatchRows, n - start)
      schema.fields.zip(vectors).foreach { case (f, v) => page(f, v, start, count) }
      if (batchOffsets.last.toLong + count > Int.MaxValue)
        throw new UnsupportedFeatureException("A legacy (V1) data file holds at most 2^31 - 1 rows")
      batchOffsets += batchOffsets.last + count
      start += count
    }
  }

  /** Rows [start, start + n) of `v` (the field `f`) as this batch's pages of `f` and its descendants. */
  private def page(f: LanceField, v: ValueVector, start: Int, n: Int): Unit = (f.arrowType, v) match {
    case (_: ArrowType.Struct, s: StructVector) =>
      f.children.zipWithIndex.foreach { case (c, i) => page(c, s.getChildByOrdinal(i), start, n) }

    case (_: ArrowType.List, l: ListVector) => list(f, l, l.getDataVector, start, n, 4, i => l.getOffsetBuffer.getInt(4L * i))
    case (_: ArrowType.LargeList, l: LargeListVector) => list(f, l, l.getDataVector, start, n, 8, i => l.getOffsetBuffer.getLong(8L * i))

    case (_: ArrowType.Null, _) => pages((f.id, batch)) = (position, n.toLong)

    case (_, w: BaseVariableWidthVector) => binary(f, start, n, i => if (w.isNull(i)) Array.emptyByteArray else w.get(i))
    case (_, w: BaseLargeVariableWidthVector) => binary(f, start, n, i => if (w.isNull(i)) Array.emptyByteArray else w.get(i))

    case (_: ArrowType.FixedSizeList, _) | (_, _: BaseFixedWidthVector) =>
      val at = position
      put(fixed(f.name, v, start, n, rowNull = _ => false))
      pages((f.id, batch)) = (at, n.toLong)

    case (t, _) => throw new UnsupportedFeatureException(
      s"Column '${f.name}' has type $t, which sparklance does not write in legacy (V1) files")
  }

  /** Plain little-endian values (a bitmap for booleans) of rows [start, start + n); nulls as zeros. */
  private def fixed(name: String, v: ValueVector, start: Int, n: Int, rowNull: Int => Boolean): Array[Byte] = v match {
    case b: BitVector =>
      val bytes = new Array[Byte]((n + 7) / 8)
      (0 until n).foreach(i => if (!rowNull(i) && !b.isNull(start + i) && b.get(start + i) == 1) bytes(i / 8) = (bytes(i / 8) | 1 << (i % 8)).toByte)
      bytes
    case l: FixedSizeListVector =>
      val size = l.getListSize
      fixed(name, l.getDataVector, start * size, n * size, i => rowNull(i / size) || l.isNull(start + i / size))
    case w: BaseFixedWidthVector =>
      val width = w.getTypeWidth
      val bytes = new Array[Byte](n * width)
      w.getDataBuffer.getBytes(start.toLong * width, bytes)
      (0 until n).foreach(i => if (rowNull(i) || w.isNull(start + i)) java.util.Arrays.fill(bytes, i * width, (i + 1) * width, 0.toByte))
      bytes
    case other => throw new UnsupportedFeatureException(
      s"Column '$name' holds ${other.getField.getType} in a fixed-size list, which sparklance does not write in legacy (V1) files")
  }

  /** The values' bytes, then the page: rows + 1 absolute positions of them. */
  private def binary(f: LanceField, start: Int, n: Int, value: Int => Array[Byte]): Unit = {
    val positions = le(8 * (n + 1))
    positions.putLong(position)
    (0 until n).foreach { i => put(value(start + i)); positions.putLong(position) }
    val at = position
    put(positions.array)
    pages((f.id, batch)) = (at, n.toLong)
  }

  /** rows + 1 offsets from 0 (a null list is empty), then the items' pages. */
  private def list(f: LanceField, l: ValueVector, items: ValueVector, start: Int, n: Int, width: Int, offset: Int => Long): Unit = {
    val first = offset(start)
    val offsets = le(width * (n + 1))
    (0 to n).foreach { i =>
      val o = offset(start + i) - first
      if (width == 4) offsets.putInt(o.toInt) else offsets.putLong(o)
    }
    val at = position
    put(offsets.array)
    pages((f.id, batch)) = (at, n + 1L)
    page(f.children.head, items, first.toInt, (offset(start + n) - first).toInt)
  }

  /** Writes the page table, the schema and the metadata; returns what the manifest records of the file. */
  def finish(): FileWriter21.Result = {
    val ids = schema.allFields.map(_.id)
    val tablePosition = position
    if (ids.nonEmpty && batch > 0) {
      val table = le(16 * (ids.max - ids.min + 1) * batch)
      for (id <- ids.min to ids.max; b <- 0 until batch) {
        val (p, l) = pages.getOrElse((id, b), (0L, 0L))
        table.putLong(p).putLong(l)
      }
      put(table.array)
    }
    val manifestPosition = position
    message(Manifest.newBuilder().addAllFields(schema.toProto.asJava)
      .putAllSchemaMetadata(schema.metadataProto)
      .setWriterVersion(Manifest.WriterVersion.newBuilder().setLibrary("sparklance").setVersion(BuildInfo.version))
      .setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance").setVersion(StorageVersion.LegacyName))
      .build().toByteArray)
    val metadataPosition = position
    message(Metadata.newBuilder().setManifestPosition(manifestPosition).setPageTablePosition(tablePosition)
      .addAllBatchOffsets(batchOffsets.map(Int.box).asJava).build().toByteArray)
    put(le(16).putLong(metadataPosition).putShort(0).putShort(2).put("LANC".getBytes("US-ASCII")).array)
    sink.close()
    FileWriter21.Result(batchOffsets.last.toLong, position, ids, Nil)
  }

  private def message(bytes: Array[Byte]): Unit = { put(le(4).putInt(bytes.length).array); put(bytes) }
}

object FileWriterV1 {
  /** Rows per batch: pylance's default `max_rows_per_group`. */
  val BatchRows = 1024

  private def le(n: Int): ByteBuffer = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN)
}
