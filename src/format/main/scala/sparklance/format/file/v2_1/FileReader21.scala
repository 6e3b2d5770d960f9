package sparklance.format.file.v2_1

import com.google.protobuf.InvalidProtocolBufferException
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.{BlobDescriptors, ContainerReader}
import sparklance.format.io.InputFile
import sparklance.format.proto.FileProtos.FileDescriptor
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Reads a Lance 2.1 or 2.2 data file (LANCE-FILE-2.1-2.2.md). The footer and all column metadata
 * are read once, here; `read` then fetches only the pages of the requested leaf columns, keeping
 * the last decoded pages of each column for the next, usually adjacent, row range. In these
 * versions only leaf fields have columns; structs and lists are rebuilt from the rep/def levels
 * every leaf carries. Not thread-safe.
 */
final class FileReader21(input: InputFile) extends sparklance.format.file.DataFileReader {
  private val container = new ContainerReader(input)
  private val path = input.path

  locally {
    val f = container.footer
    if (!(f.majorVersion == 2 && (f.minorVersion == 1 || f.minorVersion == 2)))
      throw new UnsupportedFeatureException(
        s"$path has file format version ${f.majorVersion}.${f.minorVersion}; this reader reads Lance 2.1 and 2.2 files")
  }

  private val descriptor =
    try FileDescriptor.parseFrom(container.globalBuffer(0))
    catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, "the FileDescriptor is malformed", e) }

  private val columns = new Array[ColumnReader21](container.footer.numColumns)

  /** The row count the FileDescriptor records. */
  def numRows: Long = descriptor.getLength

  /** The file's own schema (FileDescriptor), with the ids it was written with. */
  lazy val schema: LanceSchema =
    LanceSchema.fromProto(descriptor.getSchema.getFieldsList.asScala.toSeq, descriptor.getSchema.getMetadataMap)

  def numColumns: Int = columns.length

  override def globalBuffer(i: Int): Array[Byte] = container.globalBuffer(i)

  private[v2_1] def column(i: Int, name: String): ColumnReader21 = {
    if (i < 0 || i >= columns.length)
      throw new CorruptFileException(path, s"column $i (field '$name') was requested, but the file has ${columns.length} columns")
    if (columns(i) == null) columns(i) = new ColumnReader21(container, i, name, sparseRows, () => readEnd)
    columns(i)
  }

  @volatile private var sparseRows = Option.empty[RoaringBitmap]
  override def readSparsely(columns: Seq[(Int, String)], rows: RoaringBitmap): Unit = {
    sparseRows = Some(rows)
    if (!rows.isEmpty) {
      val first = Integer.toUnsignedLong(rows.first)
      columns.foreach { case (c, name) => if (c >= 0 && c < this.columns.length) column(c, name).prefetchPageOf(first) }
    }
  }

  @volatile private var readEnd = 0L
  override def willRead(columns: Seq[(Int, String)], from: Long, until: Long): Unit = if (sparseRows.isEmpty) {
    readEnd = until
    columns.foreach { case (c, name) => if (c >= 0 && c < this.columns.length) column(c, name).prefetchPageOf(from) }
  }

  /** Whether any page of column i was needed so far (for tests of projection). */
  private[v2_1] def columnOpened(i: Int): Boolean = columns(i) != null

  private def isLeaf(f: LanceField): Boolean = f.arrowType match {
    case _: ArrowType.FixedSizeList => true
    case _: ArrowType.Struct => PackedStructs.isPacked(f) || f.children.isEmpty
    case _ => f.children.isEmpty
  }

  /**
   * Decodes rows `[rowStart, rowStart + numRows)` of the top-level `field` (a table-schema field; a
   * struct may keep only some children) into a new vector from `allocator`, owned by the caller;
   * with `maxBytes`, only the first of them that fit it (see [[DataFileReader.read]]).
   * `columnOf(leafFieldId)` gives the file column of every leaf field in the subtree.
   */
  def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long): FieldVector = {
    require(rowStart >= 0 && numRows >= 0 && rowStart + numRows <= this.numRows,
      s"Rows $rowStart until ${rowStart + numRows} requested from $path, which has ${this.numRows} rows")
    if (PackedStructs.isPacked(field)) return readPacked(field, columnOf(field.id), rowStart, numRows, allocator, maxBytes)
    readVectors(field, columnOf, rowStart, numRows, allocator, maxBytes).foreach(v => return v)
    val leaves = scala.collection.mutable.ArrayBuffer.empty[(IndexedSeq[LanceField], ColumnReader21)]
    def walk(f: LanceField, path: IndexedSeq[LanceField]): Unit = {
      val here = path :+ f
      if (isLeaf(f)) {
        if (f.arrowType.isInstanceOf[ArrowType.Struct] && f.children.nonEmpty)
          throw new UnsupportedFeatureException(s"Field '${f.name}' of $path is a packed struct inside another field, " +
            "which sparklance does not read (top-level packed structs it does)")
        leaves += here -> column(columnOf(f.id), f.name)
      } else f.children.foreach(walk(_, here))
    }
    walk(field, IndexedSeq.empty)
    // Each leaf decodes the rows the leaves before it left, within what they left of the budget (a
    // fair share at least, so that one large leaf does not starve the others down to one row).
    val share = maxBytes / math.max(1, leaves.size)
    var rows = numRows
    var left = maxBytes
    val segments = leaves.toSeq.map { case (here, col) =>
      val segs = col.segments(rowStart, rows, ArrowLoad.kindOf(here.last.arrowType), math.max(left, share))
      rows = math.min(rows, segs.map(_.rows).sum)
      left -= segs.map(_.bytes).sum
      segs
    }
    // Every leaf's levels are assembled, over the rows all could decode; ancestors take the output of their first leaf.
    val outs = scala.collection.mutable.HashMap.empty[Int, NodeOut]
    leaves.zip(segments).foreach { case ((here, col), segs) =>
      val nodes = Assembler.assemble(here, Segment.take(segs, rows), Ctx(this.path, s"column ${col.index} ('${here.last.name}')"))
      here.zip(nodes).foreach { case (node, o) => if (!outs.contains(node.id)) outs(node.id) = o }
    }
    val vector = field.toArrow.createVector(allocator)
    try {
      fill(vector, field, outs)
      vector
    } catch { case e: Throwable => vector.close(); throw e }
  }

  /** A top-level leaf field (no struct or list above or below it) has its values picked row by row. */
  override def readRows(field: LanceField, columnOf: Int => Int, rows: Array[Long], allocator: BufferAllocator,
      maxBytes: Long): FieldVector =
    if (PackedStructs.isPacked(field) || !isLeaf(field) || field.arrowType.isInstanceOf[ArrowType.Struct] || field.blobEncoding.isDefined)
      super.readRows(field, columnOf, rows, allocator, maxBytes)
    else {
      val col = column(columnOf(field.id), field.name)
      val node = col.gather(rows, ArrowLoad.kindOf(field.arrowType), maxBytes)
      val vector = field.toArrow.createVector(allocator)
      try {
        ArrowLoad.leaf(vector, node, Ctx(path, s"column ${col.index} ('${field.name}')"))
        vector
      } catch { case e: Throwable => vector.close(); throw e }
    }

  /**
   * A fixed-size list of fixed-width items (a vector column) whose pages are plain full-zip pages,
   * read from the file straight into the vector's Arrow memory; None for any other field or page.
   */
  private def readVectors(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int,
      allocator: BufferAllocator, maxBytes: Long): Option[FieldVector] = field.arrowType match {
    case l: ArrowType.FixedSizeList if field.arrowItemType.map(ArrowLoad.kindOf(_).fixedBits).exists(b => b > 0 && b % 8 == 0) =>
      val valueBytes = Math.multiplyExact(l.getListSize, ArrowLoad.kindOf(field.arrowItemType.get).fixedBits / 8)
      val rows = if (numRows == 0) 0 else math.max(1L, math.min(numRows.toLong, maxBytes / math.max(valueBytes, 1))).toInt
      val col = column(columnOf(field.id), field.name)
      val vector = field.toArrow.createVector(allocator).asInstanceOf[FixedSizeListVector]
      val read = try ArrowLoad.fixedSizeListOf(vector, rows, rows.toLong * valueBytes)(col.readFixedRowsInto(rowStart, rows, valueBytes, _))
        catch { case e: Throwable => vector.close(); throw e }
      if (read) Some(vector) else { vector.close(); None }
    case _ => None
  }

  private def fill(v: FieldVector, f: LanceField, outs: collection.Map[Int, NodeOut]): Unit = {
    val ctx = Ctx(path, s"field '${f.name}'")
    val o = outs.getOrElse(f.id, throw new IllegalArgumentException(s"Field '${f.name}' has no leaf to read"))
    if (isLeaf(f)) ArrowLoad.leaf(v, o, ctx)
    else v match {
      case s: StructVector =>
        ArrowLoad.struct(s, o)
        f.children.zipWithIndex.foreach { case (c, i) => fill(s.getChildByOrdinal(i).asInstanceOf[FieldVector], c, outs) }
      case l: ListVector =>
        val item = f.children.head
        ArrowLoad.list(l, o, outs(item.id).length)
        fill(l.getDataVector, item, outs)
      case l: LargeListVector =>
        val item = f.children.head
        ArrowLoad.list(l, o, outs(item.id).length)
        fill(l.getDataVector, item, outs)
      case other => throw new UnsupportedFeatureException(s"Field '${f.name}' of $path has Arrow type ${other.getField.getType}, which is not supported")
    }
  }

  /**
   * A top-level packed struct (field metadata `lance-encoding:packed`, LANCE-FILE-2.1-2.2.md §9.9,
   * §9.10): one column whose values hold every child's value after one another, fixed-width ones
   * in their width, variable-width ones (2.2) as a length and bytes. `field` may keep only some
   * children; where each lies comes from all of them, as the file's schema lists them.
   */
  private def readPacked(field: LanceField, column: Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long): FieldVector = {
    val all = schema.allFields.find(_.id == field.id).getOrElse(field).children
    val col = this.column(column, field.name)
    val vector = field.toArrow.createVector(allocator).asInstanceOf[StructVector]
    try {
      val segments = col.segments(rowStart, numRows, LeafKind(-1, 0), maxBytes)
      val rows = segments.map(_.rows).sum
      vector.setInitialCapacity(rows)
      vector.allocateNew()
      val kids = field.children.map(c => all.indexWhere(_.id == c.id) -> vector.getChild(c.name).asInstanceOf[FieldVector])
      var row = 0
      for (seg <- segments) {
        val page = seg.page
        if (page.rep != null) throw new UnsupportedFeatureException(s"Packed struct '${field.name}' of $path is inside a list")
        var slot = seg.slotFrom
        var i = seg.levelFrom
        while (i < seg.levelTo) {
          if (page.defs != null && page.defs(i) != 0) {
            vector.setNull(row)
            if (page.defs(i) <= page.layers.maxVisibleDef) slot += 1
          } else {
            vector.setIndexDefined(row)
            val (data, from) = page.slots match {
              case f: Slots.Fixed => (f.data, slot * f.bytesPer)
              case other => Slots.bytesOf(other, slot).map(v => (v.array, v.offset)).getOrElse(throw new CorruptFileException(
                path, s"column $column ('${field.name}'): ${Slots.kind(other)} in a packed struct"))
            }
            PackedStructs.read(all, data, from, row, kids, Ctx(path, s"column $column ('${field.name}') row ${rowStart + row}"))
            slot += 1
          }
          row += 1
          i += 1
        }
      }
      kids.foreach(_._2.setValueCount(rows))
      vector.setValueCount(rows)
      vector
    } catch { case e: Throwable => vector.close(); throw e }
  }

  def blobDescriptors(field: LanceField, column: Int, rowStart: Long, numRows: Int): BlobDescriptors = {
    val encoding = field.blobEncoding.getOrElse(throw new IllegalArgumentException(s"Field '${field.name}' is not a blob column"))
    val col = this.column(column, field.name)
    val out = new BlobDescriptors(numRows)
    var row = 0
    for (seg <- col.segments(rowStart, numRows, LeafKind.Variable64)) {
      val page = seg.page
      if (page.rep != null) throw new UnsupportedFeatureException(s"Blob field '${field.name}' of $path is inside a list")
      var slot = seg.slotFrom
      var i = seg.levelFrom
      while (i < seg.levelTo) {
        val visible = page.defs == null || page.defs(i) <= page.layers.maxVisibleDef
        if (visible) {
          (encoding, page.slots) match {
            case (sparklance.format.table.BlobEncoding.V1, f: Slots.Fixed) if f.bits == 128 =>
              val position = Bytes.i64(f.data, slot * 16)
              val size = Bytes.i64(f.data, slot * 16 + 8)
              // A NULL is stored as size 0 with the levels in the position; an empty value has both 0.
              out.valid(row) = !(size == 0 && position != 0)
              out.position(row) = position
              out.size(row) = size
            // A NULL row takes a slot without bytes.
            case (sparklance.format.table.BlobEncoding.V2, _: Slots.Variable | _: Slots.Indexed) if page.defs != null && page.defs(i) != 0 =>
            case (sparklance.format.table.BlobEncoding.V2, v) if Slots.bytesOf(v, slot).isDefined =>
              val d = Slots.bytesOf(v, slot).get
              BlobDescriptorsV2.parse(d.array, d.offset, d.end, out, row,
                Ctx(path, s"column $column ('${field.name}') blob descriptor of row ${rowStart + row}"))
            case (_, other) => throw new CorruptFileException(path,
              s"column $column ('${field.name}'): ${Slots.kind(other)} where blob descriptors belong")
          }
          slot += 1
        }
        row += 1
        i += 1
      }
    }
    if (row != numRows) throw new CorruptFileException(path, s"column $column ('${field.name}'): $row blob descriptors, $numRows expected")
    out
  }

  def close(): Unit = input.close()
}
