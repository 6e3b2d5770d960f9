package sparklance.format.file.v1

import com.google.protobuf.InvalidProtocolBufferException
import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.{BlobDescriptors, DataFileReader, RowBytes, ValidityBits}
import sparklance.format.io.InputFile
import sparklance.format.proto.FileProtos.Metadata
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Reads a legacy Lance data file (file format V1, footer version 0.1 or 0.2; pylance 14 writes them
 * for `data_storage_version="legacy"`). Layout (docs/format-v1-files.md): rows are written in
 * batches, and each batch holds one page per field, found through a page table keyed by field id
 * and batch; the file's schema and metadata are at the end. V1 stores no validity: only nullable
 * string and binary fields have nulls (empty values), as pylance reads them. Not thread-safe.
 */
final class FileReaderV1(input: InputFile) extends DataFileReader {
  import FileReaderV1._

  private val path = input.path

  private val metadata: Metadata = {
    val length = input.length
    if (length < FooterSize) throw new CorruptFileException(path, s"$length bytes, shorter than a V1 footer")
    val footer = le(input.read(length - FooterSize, FooterSize))
    val position = footer.getLong(0)
    val (major, minor) = (footer.getShort(8).toInt, footer.getShort(10).toInt)
    val magic = new String(input.read(length - 4, 4), "US-ASCII")
    if (magic != "LANC") throw new CorruptFileException(path, s"no Lance magic at the end (found '$magic')")
    if (major != 0 || (minor != 1 && minor != 2))
      throw new UnsupportedFeatureException(s"$path has file format version $major.$minor; this reader reads V1 files (0.1, 0.2)")
    try Metadata.parseFrom(message(position, length - FooterSize, "the file metadata"))
    catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, "the file metadata is malformed", e) }
  }

  /** The file's own schema, as its writer stored it (a manifest holding the fields). */
  lazy val schema: LanceSchema = {
    val m = try Manifest.parseFrom(message(metadata.getManifestPosition, input.length - FooterSize, "the file schema"))
      catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, "the file schema is malformed", e) }
    LanceSchema.fromProto(m.getFieldsList.asScala.toSeq, m.getSchemaMetadataMap)
  }

  /** Row offsets of the batches: batch i holds rows [batches(i), batches(i + 1)). */
  private val batches: Array[Long] = {
    val o = metadata.getBatchOffsetsList.asScala.map(_.longValue).toArray
    if (o.isEmpty) Array(0L) else o
  }
  private def numBatches = batches.length - 1

  def numRows: Long = batches.last

  def numColumns: Int = schema.allFields.size

  /**
   * (position, length) of the page of field `id` in `batch`: the page table spans every field id
   * from the schema's smallest to its largest, batch by batch (length counts values; a list's
   * page holds its rows + 1 offsets).
   */
  private lazy val pageTable: Array[Long] = {
    val ids = schema.allFields.map(_.id)
    if (ids.isEmpty || numBatches == 0) Array.emptyLongArray
    else {
      val n = (ids.max - ids.min + 1) * numBatches * 2
      val b = le(read(metadata.getPageTablePosition, 8L * n, "the page table"))
      Array.fill(n)(b.getLong)
    }
  }
  private lazy val minId = schema.allFields.map(_.id).min

  private def page(field: LanceField, batch: Int): (Long, Long) = {
    val i = ((field.id - minId).toLong * numBatches + batch) * 2
    if (field.id < minId || i + 1 >= pageTable.length)
      throw new CorruptFileException(path, s"no page of field '${field.name}' (id ${field.id}) in batch $batch")
    (pageTable(i.toInt), pageTable(i.toInt + 1))
  }

  private def read(position: Long, length: Long, what: String): Array[Byte] = {
    if (position < 0 || length < 0 || position + length > input.length)
      throw new CorruptFileException(path, s"$what at $position (+$length) lies outside the file of ${input.length} bytes")
    if (length > Int.MaxValue) throw new UnsupportedFeatureException(s"$what in $path is $length bytes, more than one read can hold")
    if (length == 0) Array.emptyByteArray else input.read(position, length.toInt)
  }

  /** A message written as a u32 length and its bytes, at `position`, before `end`. */
  private def message(position: Long, end: Long, what: String): Array[Byte] = {
    val n = Integer.toUnsignedLong(le(read(position, 4, what)).getInt)
    if (position + 4 + n > end) throw new CorruptFileException(path, s"$what at $position claims $n bytes, past its end")
    read(position + 4, n, what)
  }

  def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long): FieldVector = {
    require(rowStart >= 0 && numRows >= 0 && rowStart + numRows <= this.numRows,
      s"Rows $rowStart until ${rowStart + numRows} requested from $path, which has ${this.numRows} rows")
    if (field.blobEncoding.isDefined)
      throw new UnsupportedFeatureException(s"Blob column '${field.name}' in legacy (V1) file $path: sparklance reads no V1 blobs")
    val vector = field.toArrow.createVector(allocator)
    try {
      vector.setInitialCapacity(numRows)
      vector.allocateNew()
      // Pages are per batch: read batch by batch, cut after the batch that reaches the budget.
      var row = 0
      var batch = java.util.Arrays.binarySearch(batches, rowStart) match {
        case i if i >= 0 => i
        case i => -i - 2
      }
      while (row < numRows && (row == 0 || maxBytes == Long.MaxValue || RowBytes(vector, 0, row) < maxBytes)) {
        val from = rowStart + row - batches(batch)
        val count = math.min(numRows - row, batches(batch + 1) - batches(batch) - from).toInt
        fill(vector, field, batch, from, count, row)
        row += count
        batch += 1
      }
      vector.setValueCount(row)
      vector
    } catch { case e: Throwable => vector.close(); throw e }
  }

  /** Writes rows [from, from + count) of `batch` of `field` into `v` from its index `at`. */
  private def fill(v: ValueVector, field: LanceField, batch: Int, from: Long, count: Int, at: Int): Unit = {
    if (count == 0) return
    (field.arrowType, v) match {
      case (_: ArrowType.Struct, s: StructVector) =>
        field.children.zipWithIndex.foreach { case (child, i) => fill(s.getChildByOrdinal(i), child, batch, from, count, at) }
        (at until at + count).foreach(s.setIndexDefined)

      case (_: ArrowType.List, l: ListVector) =>
        fillList(l, l.getDataVector, field, batch, listOffsets(field, batch, from, count, 4), at)
        l.setLastSet(at + count - 1)

      case (_: ArrowType.LargeList, l: LargeListVector) =>
        fillList(l, l.getDataVector, field, batch, listOffsets(field, batch, from, count, 8), at)
        l.setLastSet(at + count - 1)

      case (_: ArrowType.Null, _) =>

      case (_: ArrowType.Utf8 | _: ArrowType.Binary | _: ArrowType.LargeUtf8 | _: ArrowType.LargeBinary, _) =>
        fillBinary(v, field, batch, from, count, at)

      case (t, _) if !isFixed(t) && !t.isInstanceOf[ArrowType.FixedSizeList] =>
        throw new UnsupportedFeatureException(
          s"Column '${field.name}' of legacy (V1) file $path has type $t, which sparklance does not read in V1 files")

      case _ => fillFixed(v, field.arrowType, field.arrowItemType, page(field, batch)._1, from, count, at, field.name)
    }
  }

  /** Values [from, from + count) of a fixed-width page at `position` into `v` from `at`: plain little-endian values, no nulls. */
  private def fillFixed(v: ValueVector, arrowType: ArrowType, itemType: Option[ArrowType], position: Long, from: Long,
      count: Int, at: Int, name: String): Unit = {
    ensure(v, at.toLong + count)
    (arrowType, v) match {
      case (t: ArrowType.FixedSizeList, l: FixedSizeListVector) =>
        // A fixed-size list is one plain run of its items.
        val size = t.getListSize
        fillFixed(l.getDataVector, itemType.get, None, position, from * size, count * size, at * size, name)
        ValidityBits.setRange(l.getValidityBuffer, at, count)
      case (_: ArrowType.Bool, b: BitVector) =>
        val bytes = read(position + from / 8, (from % 8 + count + 7) / 8, s"page of '$name'")
        var i = 0
        while (i < count) {
          val bit = from % 8 + i
          b.set(at + i, (bytes((bit / 8).toInt) >> (bit % 8).toInt) & 1)
          i += 1
        }
      case (t, f: BaseFixedWidthVector) if isFixed(t) =>
        val width = f.getTypeWidth
        val bytes = read(position + from * width, count.toLong * width, s"page of '$name'")
        f.getDataBuffer.setBytes(at.toLong * width, bytes)
        ValidityBits.setRange(f.getValidityBuffer, at, count)
      case (t, _) => throw new UnsupportedFeatureException(
        s"Column '$name' of legacy (V1) file $path holds $t in a fixed-size list, which sparklance does not read in V1 files")
    }
  }

  /** count + 1 offsets of lists [from, from + count) of a batch (their page holds rows + 1 offsets of `width` bytes). */
  private def listOffsets(field: LanceField, batch: Int, from: Long, count: Int, width: Int): Array[Long] = {
    val (position, _) = page(field, batch)
    val b = le(read(position + from * width, (count + 1L) * width, s"list offsets of '${field.name}'"))
    Array.fill(count + 1)(if (width == 4) Integer.toUnsignedLong(b.getInt) else b.getLong)
  }

  private def fillList(l: FieldVector, items: FieldVector, field: LanceField, batch: Int, offsets: Array[Long],
      at: Int): Unit = {
    val count = offsets.length - 1
    val large = l.isInstanceOf[LargeListVector]
    while (l.getValueCapacity < at + count + 1) l.reAlloc()
    // Items go after those of the rows before `at`; V1 lists have no nulls (a null list was written empty).
    def offset(i: Int): Long = if (large) l.getOffsetBuffer.getLong(8L * i) else l.getOffsetBuffer.getInt(4L * i).toLong
    val base = if (at == 0) 0L else offset(at)
    var i = 0
    while (i <= count) {
      val o = base + offsets(i) - offsets(0)
      if (large) l.getOffsetBuffer.setLong(8L * (at + i), o) else l.getOffsetBuffer.setInt(4L * (at + i), o.toInt)
      if (i < count) BitVectorHelper.setBit(l.getValidityBuffer, at + i)
      i += 1
    }
    val n = offsets(count) - offsets(0)
    if (base + n > Int.MaxValue) throw new UnsupportedFeatureException(
      s"Lists of '${field.name}' in $path hold ${base + n} items in one read; read fewer rows at a time")
    ensure(items, base + n)
    fill(items, field.children.head, batch, offsets(0), n.toInt, base.toInt)
    items.setValueCount((base + n).toInt)
  }

  /** Strings or binaries: the page holds rows + 1 absolute file positions (i64) of the values, written before them. */
  private def fillBinary(v: ValueVector, field: LanceField, batch: Int, from: Long, count: Int, at: Int): Unit = {
    val (position, _) = page(field, batch)
    val b = le(read(position + from * 8, (count + 1L) * 8, s"value positions of '${field.name}'"))
    val positions = Array.fill(count + 1)(b.getLong)
    val bytes = read(positions(0), positions(count) - positions(0), s"values of '${field.name}'")
    var i = 0
    while (i < count) {
      val (s, e) = ((positions(i) - positions(0)).toInt, (positions(i + 1) - positions(0)).toInt)
      // V1 keeps no validity: an empty value of a nullable field is null (pylance reads it so).
      val isNull = s == e && field.nullable
      v match {
        case w: BaseVariableWidthVector => if (isNull) w.setNull(at + i) else w.setSafe(at + i, bytes, s, e - s)
        case w: BaseLargeVariableWidthVector => if (isNull) w.setNull(at + i) else w.setSafe(at + i, bytes, s, e - s)
        case other => throw new IllegalStateException(s"${other.getClass.getSimpleName} for binary field '${field.name}'")
      }
      i += 1
    }
  }

  def blobDescriptors(field: LanceField, column: Int, rowStart: Long, numRows: Int): BlobDescriptors =
    throw new UnsupportedFeatureException(s"Blob column '${field.name}' in legacy (V1) file $path: sparklance reads no V1 blobs")

  def close(): Unit = input.close()
}

object FileReaderV1 {
  /** u64 metadata position, u16 major, u16 minor, "LANC". */
  val FooterSize = 16

  private def le(bytes: Array[Byte]): ByteBuffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN)

  private def isFixed(t: ArrowType): Boolean = sparklance.format.file.FixedWidth.bits(t).isDefined

  /** Makes room for `rows` values in a fixed-width or fixed-size-list vector. */
  private def ensure(v: ValueVector, rows: Long): Unit = while (v.getValueCapacity < rows) v.reAlloc()
}
