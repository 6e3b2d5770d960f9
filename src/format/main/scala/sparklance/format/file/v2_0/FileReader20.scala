package sparklance.format.file.v2_0

import com.google.protobuf.InvalidProtocolBufferException
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, NullVector}
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.{ContainerReader, RangeReads, RowBytes}
import sparklance.format.io.InputFile
import sparklance.format.proto.FileProtos.FileDescriptor
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Reads a Lance 2.0 data file (footer version 0.3, or 2.0). The footer and all column metadata
 * are read once, here; `read` then fetches only the pages of the requested columns, keeping the
 * last decoded page of each column for the next, usually adjacent, row range. Not thread-safe.
 */
final class FileReader20(input: InputFile) extends sparklance.format.file.DataFileReader {
  private val container = new ContainerReader(input)
  private val path = input.path

  locally {
    val f = container.footer
    if (!((f.majorVersion == 0 && f.minorVersion == 3) || (f.majorVersion == 2 && f.minorVersion == 0)))
      throw new UnsupportedFeatureException(
        s"$path has file format version ${f.majorVersion}.${f.minorVersion}; this reader reads Lance 2.0 files (0.3 or 2.0)")
  }

  private val descriptor =
    try FileDescriptor.parseFrom(container.globalBuffer(0))
    catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, "the FileDescriptor is malformed", e) }

  private val columns = new Array[ColumnReader](container.footer.numColumns)

  /** The row count the FileDescriptor records. */
  def numRows: Long = descriptor.getLength

  /** The file's own schema (FileDescriptor), with the ids it was written with. */
  lazy val schema: LanceSchema =
    LanceSchema.fromProto(descriptor.getSchema.getFieldsList.asScala.toSeq, descriptor.getSchema.getMetadataMap)

  def numColumns: Int = columns.length

  override def globalBuffer(i: Int): Array[Byte] = container.globalBuffer(i)

  private[v2_0] def column(i: Int): ColumnReader = {
    if (i < 0 || i >= columns.length)
      throw new CorruptFileException(path, s"column $i was requested, but the file has ${columns.length} columns")
    if (columns(i) == null) columns(i) = new ColumnReader(container, i)
    columns(i)
  }

  def blobDescriptors(field: LanceField, column: Int, rowStart: Long, numRows: Int): sparklance.format.file.BlobDescriptors = {
    if (!field.blobEncoding.contains(sparklance.format.table.BlobEncoding.V1))
      throw new IllegalArgumentException(s"Field '${field.name}' is not a blob column of file format 2.0")
    val out = new sparklance.format.file.BlobDescriptors(numRows)
    var row = 0
    for (seg <- this.column(column).segments(rowStart, numRows, Shape.Fixed(128))) seg.data match {
      case f: Decoded.FixedValues =>
        var i = 0
        while (i < seg.count) {
          val at = f.base + (seg.from + i) * 16
          val position = LittleEndian.getLong(f.data, at)
          val size = LittleEndian.getLong(f.data, at + 8)
          // pylance stores a NULL as position 1, size 0.
          out.valid(row) = !(size == 0 && position == 1)
          out.position(row) = position
          out.size(row) = size
          row += 1; i += 1
        }
      case _ => throw new CorruptFileException(path, s"column $column ('${field.name}'): no blob descriptors in page ${seg.page}")
    }
    out
  }

  /** Whether any page or metadata of column i was needed so far (for tests of projection). */
  private[v2_0] def columnOpened(i: Int): Boolean = columns(i) != null

  /**
   * Decodes rows `[rowStart, rowStart + numRows)` of the top-level `field` (a table-schema field; a
   * struct may keep only some children) into a new vector from `allocator`, owned by the caller;
   * with `maxBytes`, only the first of them that fit it (see [[DataFileReader.read]]; lists are read
   * whole). `columnOf(fieldId)` gives the file column of every field id in the subtree.
   */
  def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long): FieldVector = read(field, columnOf, rowStart, numRows, allocator, maxBytes, sparse = false)

  /** As [[read]]; `sparse`: a few rows of a page, read from its parts where the page allows. */
  private def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long, sparse: Boolean): FieldVector = {
    require(rowStart >= 0 && numRows >= 0 && rowStart + numRows <= this.numRows,
      s"Rows $rowStart until ${rowStart + numRows} requested from $path, which has ${this.numRows} rows")
    val vector = field.toArrow.createVector(allocator)
    try {
      val rows = fill(vector, field, columnOf, rowStart, numRows, maxBytes, sparse)
      if (rows < numRows) vector.setValueCount(rows)
      vector
    } catch { case e: Throwable => vector.close(); throw e }
  }

  /**
   * Rows far apart are read one range each, rows close together as one range: a range spans at
   * most as many rows as take [[FileReader20.SpanBytes]] in the file (the field's columns' bytes
   * a row), so that reading the rows between two picked ones costs about what one more range
   * costs. Vectors of 128 floats are read a row at a time where a thousand rows lie between picks;
   * narrow columns in ranges of thousands of rows. Only where the file reads cheaply (a local
   * file): on an object store every range would be a request, and pages are read whole, as a scan
   * reads them.
   */
  override def readRows(field: LanceField, columnOf: Int => Int, rows: Array[Long], allocator: BufferAllocator,
      maxBytes: Long): FieldVector = if (!input.readsCheaply) super.readRows(field, columnOf, rows, allocator, maxBytes) else {
    val bytesPerRow = math.max(1.0, field.preOrder.map(f => column(columnOf(f.id)).storedBytes).sum.toDouble / math.max(1L, numRows))
    val span = math.max(1, math.min(RangeReads.MaxSpan.toDouble, FileReader20.SpanBytes / bytesPerRow).toInt)
    RangeReads.rows(rows, allocator, maxBytes, span)((start, n, left) => read(field, columnOf, start, n, allocator, left, sparse = true))
  }

  /** Fills `v` with the first of rows `[start, start + n)` that fit `maxBytes`; returns how many. */
  private def fill(v: FieldVector, field: LanceField, columnOf: Int => Int, start: Long, n: Int, maxBytes: Long,
      sparse: Boolean): Int = {
    val col = column(columnOf(field.id))
    field.arrowType match {
      case _: ArrowType.Struct =>
        col.checkStructPages()
        col.checkRange(start, n)
        val struct = v.asInstanceOf[StructVector]
        VectorLoader.load(struct, n, null, Nil)
        // Each child reads the rows the children before it left, within what they left of the
        // budget (a fair share at least); the struct is cut to the rows all of them read.
        val share = maxBytes / math.max(1, field.children.size)
        var rows = n
        var left = maxBytes
        field.children.zipWithIndex.foreach { case (child, i) =>
          val kid = struct.getChildByOrdinal(i).asInstanceOf[FieldVector]
          rows = math.min(rows, fill(kid, child, columnOf, start, rows, math.max(left, share), sparse))
          if (maxBytes < Long.MaxValue) left -= RowBytes(kid, 0, rows)
        }
        rows

      case _: ArrowType.List | _: ArrowType.LargeList =>
        val item = field.children.headOption.getOrElse(
          throw new IllegalArgumentException(s"List field '${field.name}' has no item field"))
        val (validity, offsets) = listOffsets(col, start, n)
        val first = offsets(0)
        val relative = offsets.map(_ - first)
        val large = field.arrowType.isInstanceOf[ArrowType.LargeList]
        VectorLoader.loadList(v, n, validity, relative, large)
        val items = v match {
          case l: ListVector => l.getDataVector
          case l: LargeListVector => l.getDataVector
        }
        val count = relative(n)
        if (count > Int.MaxValue) throw new UnsupportedFeatureException(
          s"Rows $start until ${start + n} of list field '${field.name}' in $path hold $count items; read fewer rows at a time")
        fill(items, item, columnOf, first, count.toInt, Long.MaxValue, sparse)
        n

      case _: ArrowType.Null =>
        col.checkRange(start, n)
        v.asInstanceOf[NullVector].setValueCount(n)
        n

      case t =>
        val values = Shape.of(field.name, t, field.arrowItemType)
        val shape = field.dictionary.fold(values)(index => Shape.DictionaryField(index.getBitWidth, values))
        shape match {
          case Shape.FixedSizeList(dim, Shape.Fixed(bits)) if bits % 8 == 0 =>
            readPlainLists(v.asInstanceOf[FixedSizeListVector], col, start, n, dim, bits, maxBytes).foreach(rows => return rows)
          // A few values of a page: read from the file as they are, not the page decoded whole.
          case Shape.Fixed(bits) if sparse && bits % 8 == 0 =>
            readPlainValues(v, col, start, n, bits, maxBytes).foreach(rows => return rows)
          case _ =>
        }
        val segments = (if (sparse && shape == Shape.Variable) col.plainBinarySegments(start, n, maxBytes) else None)
          .getOrElse(col.segments(start, n, shape, maxBytes))
        val rows = segments.map(_.count).sum
        VectorLoader.loadLeaf(v, segments, rows)
        rows
    }
  }

  /**
   * Fixed-size lists of fixed-width items (vectors) stored plainly, read from the file straight
   * into the vector's Arrow memory, as many as `maxBytes` holds (one at least, as
   * [[Decoded.valuesWithin]] counts): the rows read; None, with `v` untouched, where a page stores
   * them otherwise. Decoding a page of vectors first copied all its bytes onto the heap.
   */
  private def readPlainLists(v: FixedSizeListVector, col: ColumnReader, start: Long, n: Int, dim: Int, bits: Int,
      maxBytes: Long): Option[Int] = {
    val valueBytes = math.max(1L, dim.toLong * (bits / 8))
    val rows = if (n == 0) 0 else math.max(1L, math.min(n.toLong, maxBytes / valueBytes)).toInt
    val data = v.getAllocator.buffer(math.max(1L, rows * valueBytes))
    val read = try col.readPlainListsInto(start, rows, dim, bits, data) catch { case e: Throwable => data.close(); throw e }
    if (!read) { data.close(); None }
    else {
      VectorLoader.load(v, rows, null, Nil)
      VectorLoader.load(v.getDataVector, Math.multiplyExact(rows, dim), null, Seq(data))
      Some(rows)
    }
  }

  /** Values of `bits` each stored plainly, read from the file straight into `v`'s Arrow memory, as [[readPlainLists]]. */
  private def readPlainValues(v: FieldVector, col: ColumnReader, start: Long, n: Int, bits: Int, maxBytes: Long): Option[Int] = {
    val valueBytes = bits / 8L
    val rows = if (n == 0) 0 else math.max(1L, math.min(n.toLong, maxBytes / valueBytes)).toInt
    val data = v.getAllocator.buffer(math.max(1L, rows * valueBytes))
    val read = try col.readPlainValuesInto(start, rows, bits, data) catch { case e: Throwable => data.close(); throw e }
    if (!read) { data.close(); None }
    else {
      VectorLoader.load(v, rows, null, Seq(data))
      Some(rows)
    }
  }

  /** The validity (null = all valid) and global item offsets (n + 1) of lists `[start, start + n)` (§6.2). */
  private def listOffsets(col: ColumnReader, start: Long, n: Int): (Array[Byte], Array[Long]) = {
    val itemStarts = col.itemStarts
    val segs = col.segments(start, n, Shape.ListOffsets)
    val offsets = new Array[Long](n + 1)
    val validity = new Array[Byte](Bits.bytesFor(n))
    var anyNull = false
    var row = 0
    segs.foreach { s =>
      // itemStarts has checked that every page is a list page, so none decodes to AllNull.
      val d = s.data.asInstanceOf[Decoded.ListOffsets]
      val base = itemStarts(s.page)
      if (row == 0) offsets(0) = base + d.ends(s.from)
      var i = 0
      while (i < s.count) {
        offsets(row + i + 1) = base + d.ends(s.from + i + 1)
        i += 1
      }
      if (d.validity == null) Bits.setOnes(validity, row, s.count)
      else {
        Bits.copy(d.validity, s.from, validity, row, s.count)
        anyNull = true
      }
      row += s.count
    }
    (if (anyNull) validity else null, offsets)
  }

  def close(): Unit = input.close()
}

object FileReader20 {
  /** The file bytes a range of picked rows spans at most: a range read costs about as much as copying this many. */
  val SpanBytes = 32 * 1024
}
