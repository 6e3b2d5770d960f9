package sparklance.format.index.scalar

import java.nio.{ByteBuffer, ByteOrder}
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps

/**
 * Lance's serialized row address treemap (LANCE-SCALAR-INDICES.md §0): `u32 n`, then per fragment,
 * in ascending id order, `u32 fragment id, u32 size` and `size` bytes of portable Roaring offsets,
 * little endian. [[sparklance.format.skipping.BitmapSegment.treemap]] reads it.
 */
object RowAddressTreemap {
  /** The treemap of `offsets` by fragment id; empty bitmaps are left out. */
  def encode(offsets: collection.Map[Long, RoaringBitmap]): Array[Byte] = {
    // Size 0 would mean "the whole fragment": every entry is written out instead.
    val parts = offsets.toSeq.filter(!_._2.isEmpty).sortBy(_._1).map { case (fragment, b) => fragment -> PortableBitmaps.toBytes(b) }
    val out = ByteBuffer.allocate(4 + parts.map(8 + _._2.length).sum).order(ByteOrder.LITTLE_ENDIAN)
    out.putInt(parts.size)
    parts.foreach { case (fragment, bytes) =>
      require(fragment >= 0 && fragment <= 0xffffffffL, s"fragment id $fragment does not fit a treemap key")
      out.putInt(fragment.toInt).putInt(bytes.length).put(bytes)
    }
    out.array()
  }
}
