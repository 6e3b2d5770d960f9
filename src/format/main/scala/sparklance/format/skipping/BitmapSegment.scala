package sparklance.format.skipping

import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, LargeVarBinaryVector, VarBinaryVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.io.Storage
import sparklance.format.table.BasePaths
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
  val LookupFile = "bitmap_page_lookup.lance"

  def isBitmap(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /** The keys of `index`, a BITMAP on a column of Arrow type `columnType`; None for keys of another type. */
  def read(storage: Storage, files: BasePaths, index: IndexMetadata, columnType: ArrowType,
      allocator: BufferAllocator): Option[BitmapSegment] = {
    val file = IndexFile.open(storage, files, index, LookupFile)
    try {
      if (!file.flat || !file.schema.field("keys").exists(_.arrowType == columnType)) None
      else file.all(Seq("keys", "bitmaps"), allocator) {
        case Seq(keys, bitmaps) => Some(BitmapSegment(index, (0 until keys.getValueCount).map(i => ZoneValues.at(keys, i) -> bytes(bitmaps, i))))
      }
    } finally file.close()
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
