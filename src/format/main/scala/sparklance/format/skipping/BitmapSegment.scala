package sparklance.format.skipping

import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, LargeVarBinaryVector, VarBinaryVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, Resources}
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.file.DataFileReader
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * One segment of a BITMAP index as pylance writes it (LANCE-SCALAR-INDICES.md §4): in
 * `bitmap_page_lookup.lance` one row a distinct value (null first), with the row addresses holding
 * it as a treemap: `u32 n`, then per fragment `u32 fragment id, u32 size` and `size` bytes of
 * portable Roaring offsets (size 0: every row of the fragment). On tables without stable row ids
 * the entries are row addresses; with them they are row ids, which this reader does not use.
 */
final case class BitmapSegment(index: IndexMetadata, keys: IndexedSeq[(Option[ZoneValue], Array[Byte])])

object BitmapSegment {
  val TypeUrlSuffix = "lance.table.BitmapIndexDetails"
  private val LookupFile = "bitmap_page_lookup.lance"

  def isBitmap(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /** The keys of `index`, a BITMAP on a column of Arrow type `columnType`; None for keys of another type. */
  def read(storage: Storage, tablePath: String, index: IndexMetadata, columnType: ArrowType,
      allocator: BufferAllocator): Option[BitmapSegment] = {
    val path = Storage.join(tablePath, s"_indices/${Indices.directory(index)}/$LookupFile")
    val size = index.getFilesList.asScala.find(_.getPath == LookupFile).map(_.getSizeBytes).filter(_ > 0)
    val reader = DataFileReader.open(size.fold(storage.openInput(path))(storage.openInput(path, _)))
    try {
      val fields = reader.schema.fields
      def field(name: String) = fields.find(_.name == name).getOrElse(
        throw new CorruptFileException(path, s"no '$name' column: ${fields.map(_.name).mkString(", ")}"))
      if (fields.exists(_.children.nonEmpty) || field("keys").arrowType != columnType) None
      else {
        val columnOf = fields.map(_.id).zipWithIndex.toMap
        val n = Math.toIntExact(reader.numRows)
        val vectors = Seq(field("keys"), field("bitmaps")).map(f => reader.read(f, columnOf, 0, n, allocator))
        try {
          val Seq(keys, bitmaps) = vectors
          Some(BitmapSegment(index, (0 until n).map(i => ZoneValues.at(keys, i) -> bytes(bitmaps, i))))
        } finally Resources.closeAll(vectors)
      }
    } finally reader.close()
  }

  private def bytes(v: FieldVector, i: Int): Array[Byte] = v match {
    case b: VarBinaryVector => b.get(i)
    case b: LargeVarBinaryVector => b.get(i)
    case other => throw new IllegalArgumentException(s"Bitmaps in ${other.getField}")
  }

  /** The offsets per fragment a treemap holds; `physicalRows` sizes the fragments it holds whole. */
  def treemap(bytes: Array[Byte], physicalRows: Long => Long): Map[Long, RoaringBitmap] = {
    val b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN)
    val n = Integer.toUnsignedLong(b.getInt)
    (0L until n).map { _ =>
      val fragment = Integer.toUnsignedLong(b.getInt)
      val size = b.getInt
      val offsets =
        if (size == 0) { val all = new RoaringBitmap(); all.add(0L, physicalRows(fragment)); all }
        else {
          val part = new Array[Byte](size)
          b.get(part)
          PortableBitmaps.fromBytes(part)
        }
      fragment -> offsets
    }.toMap
  }
}
