package sparklance.format.file.v2_1

import java.io.OutputStream
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.types.pojo.{ArrowType, Schema}
import scala.jdk.CollectionConverters._
import sparklance.format.{Resources, UnsupportedFeatureException}
import sparklance.format.file.{BlobSidecars, ContainerWriter, FixedWidth, PageCutter}
import sparklance.format.table.{BlobEncoding, LanceField, LanceSchema}

/**
 * Writes one Lance data file of format 2.1 or 2.2 (`minor` = 1 or 2; LANCE-FILE-2.1-2.2.md §11).
 * `schema` = the top-level fields to write, with table field ids. Every leaf field gets one column
 * (structs and lists live in the rep/def levels of the leaves below them); a fixed-size list is a
 * leaf.
 *
 * Each top-level field collects rows until their Arrow size would pass `maxPageBytes`; then every
 * leaf column of that field gets a page (or a few, see LeafColumnWriter). Rows are never split.
 *
 * Encodings: mini-block pages for values under 256 bytes (flat, bool, variable and fixed-size-list
 * values; integers inline bit-packed and strings/binaries LZ4-compressed per chunk when that pays;
 * levels out-of-line bit-packed), full-zip pages for larger values and for rows whose levels do not
 * fit mini-block chunks, all-null constant pages (the form both 2.1 and 2.2 accept) and, in 2.2,
 * inline constant pages for fixed-width values that are all equal apart from nulls. Types it
 * cannot encode (maps below 2.2, unions, intervals, packed structs of variable-width or nested fields, fixed-size lists of non-fixed
 * items) are refused with an UnsupportedFeatureException naming the column.
 */
final class FileWriter21(out: OutputStream, schema: LanceSchema, minor: Int, maxPageBytes: Long = 8L << 20,
    sidecars: Option[BlobSidecars] = None) {
  require(minor == 1 || minor == 2, s"Lance file format 2.$minor is not written; use 2.1 or 2.2")

  /** Where each mini-block page's chunks are assembled, one page at a time, for every column. */
  private val chunkScratch = new ByteSink(1 << 16)
  private val leafFields: IndexedSeq[Seq[LanceField]] = schema.fields.map(FileWriter21.leaves).toIndexedSeq
  private val leaves: IndexedSeq[IndexedSeq[ColumnWriter21]] = schema.fields.map { f =>
    FileWriter21.check(f, f.name, minor)
    if (f.blobEncoding.contains(BlobEncoding.V2)) IndexedSeq(new BlobColumnWriter21(f, sidecars.getOrElse(
      throw new IllegalArgumentException(s"Blob column '${f.name}' needs a place for its sidecar files"))))
    else if (f.blobEncoding.contains(BlobEncoding.V1)) IndexedSeq(new BlobV1ColumnWriter21(f, minor))
    else FileWriter21.paths(f).map { case (path, ordinals) => new LeafColumnWriter(path, ordinals, minor, chunkScratch) }.toIndexedSeq
  }.toIndexedSeq
  private val container = new ContainerWriter(out)
  private val pages = new PageCutter(schema, maxPageBytes,
    (i, v, start, count) => leaves(i).foreach(_.append(v, start, count)), i => leaves(i).foreach(_.flush(container)))

  /**
   * Appends rows: `vectors` are in schema.fields order, all with the same value count (may be 0).
   * The vectors are copied, so the caller keeps ownership of them.
   */
  def write(vectors: Seq[FieldVector]): Unit = pages.write(vectors)

  /**
   * Writes `rows` rows that `fill` sets into fresh vectors of `arrow` (this file's schema as Arrow),
   * freed after the write: how index files write their small tables.
   */
  def writeRows(arrow: Schema, rows: Int, allocator: BufferAllocator)(fill: Seq[FieldVector] => Unit): Unit = {
    val vectors: Seq[FieldVector] = arrow.getFields.asScala.map(_.createVector(allocator)).toSeq
    try {
      fill(vectors)
      vectors.foreach(_.setValueCount(rows))
      write(vectors)
    } finally Resources.closeAll(vectors)
  }

  /**
   * Finishes the file and closes `out`. `globalBuffers` follow the file descriptor (global buffer
   * 0) as buffers 1, 2, ...: where index files keep payloads their schema metadata names by number.
   */
  def finish(globalBuffers: Seq[Array[Byte]] = Nil): FileWriter21.Result = {
    try {
      val descriptor = pages.finish(everyField = true)
      val columns = leaves.flatten.map(_.metadata)
      val size = container.finish(descriptor +: globalBuffers, columns, 2, minor)
      FileWriter21.Result(pages.rowCount, size, leafFields.flatten.map(_.id), columns.indices)
    } finally out.close()
  }
}

object FileWriter21 {
  /**
   * `fieldIds`/`columnIndices` are what the manifest's DataFile records for a 2.1+ file, as
   * pylance writes it: the leaf field ids in schema order and their columns 0..n-1 (§1.3).
   */
  final case class Result(numRows: Long, sizeBytes: Long, fieldIds: Seq[Int], columnIndices: Seq[Int])

  private def isList(t: ArrowType) = LeafColumnWriter.isList(t)

  /** The leaf fields below (or at) `f`, in column order. */
  private[v2_1] def leaves(f: LanceField): Seq[LanceField] = f.arrowType match {
    // A blob field and a packed struct are one column each, listed under their own id (as pylance writes them).
    case _ if f.blobEncoding.isDefined || PackedStructs.isPacked(f) => Seq(f)
    case t if t.isInstanceOf[ArrowType.Struct] || isList(t) => f.children.flatMap(leaves)
    case _ => Seq(f)
  }

  /** The path from `f` to each leaf, with each node's position among its parent's children. */
  private def paths(f: LanceField): Seq[(IndexedSeq[LanceField], IndexedSeq[Int])] = f.arrowType match {
    case _ if PackedStructs.isPacked(f) => Seq((IndexedSeq(f), IndexedSeq(0)))
    case t if t.isInstanceOf[ArrowType.Struct] || isList(t) =>
      f.children.zipWithIndex.flatMap { case (c, i) =>
        paths(c).map { case (p, o) => (f +: p, 0 +: (i +: o.tail)) }
      }
    case _ => Seq((IndexedSeq(f), IndexedSeq(0)))
  }

  /** Throws for the fields this writer cannot encode so that pylance reads them back. */
  private def check(f: LanceField, path: String, minor: Int, nested: Boolean = false): Unit = {
    def unsupported(what: String) = throw new UnsupportedFeatureException(
      s"Column '$path': Lance file format 2.1/2.2 writing does not support $what")
    if (PackedStructs.isPacked(f)) {
      // As pylance packs them: top-level, of fixed-width fields of whole bytes (the variable packed struct of 2.2 is not written).
      if (nested) unsupported(s"a packed struct (${PackedStructs.MetadataKey}) inside another field")
      f.children.foreach(c => FixedWidth.bits(c.arrowType) match {
        case Some(b) if b > 0 && b % 8 == 0 =>
        case _ => unsupported(s"a packed struct (${PackedStructs.MetadataKey}) of field '${c.name}' of type ${c.logicalType}; " +
          "sparklance packs fixed-width fields of whole bytes")
      })
      return
    }
    if (f.blobEncoding.contains(BlobEncoding.V2) && minor < 2)
      throw new UnsupportedFeatureException(s"Column '$path': blob v2 columns need file format 2.2")
    if (f.blobEncoding.isDefined) return
    Seq(PackedStructs.MetadataKey, BlobEncoding.MetadataKey).foreach { k =>
      if (f.metadata.get(k).exists(_.equalsIgnoreCase("true"))) unsupported(s"the field metadata $k=true")
    }
    f.arrowType match {
      case _: ArrowType.Struct =>
        if (f.children.isEmpty) unsupported("a struct without fields")
        f.children.foreach(c => check(c, s"$path.${c.name}", minor, nested = true))
      case _: ArrowType.Map =>
        // pylance refuses maps below 2.2 too ("Map data type is not enabled by the selected file format").
        if (minor < 2) throw new UnsupportedFeatureException(s"Column '$path' is a map: Lance stores maps from file " +
          "format 2.2 on; this table's data files are 2.1 (create the table with data_storage_version 2.2)")
        if (f.children.size != 1 || f.children.head.children.size != 2)
          unsupported("a map whose entries are not one struct of key and value")
        f.children.foreach(c => check(c, s"$path.${c.name}", minor, nested = true))
      case _: ArrowType.List | _: ArrowType.LargeList =>
        if (f.children.size != 1) unsupported(s"a list with ${f.children.size} item fields")
        f.children.foreach(c => check(c, s"$path.${c.name}", minor, nested = true))
      case l: ArrowType.FixedSizeList =>
        if (l.getListSize <= 0) unsupported(s"a fixed_size_list of size ${l.getListSize}")
        f.arrowItemType match {
          case Some(t) if FixedWidth.bits(t).exists(b => b == 1 || b % 8 == 0) =>
          case other => unsupported(s"the Arrow type fixed_size_list<${other.getOrElse("?")}>")
        }
      case _: ArrowType.Null | _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary =>
      case t => FixedWidth.bits(t) match {
        case Some(b) if b == 1 || b % 8 == 0 =>
        case _ => unsupported(s"the Arrow type $t")
      }
    }
  }
}
