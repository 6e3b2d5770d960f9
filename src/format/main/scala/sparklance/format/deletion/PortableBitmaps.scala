package sparklance.format.deletion

import java.nio.ByteBuffer
import org.roaringbitmap.RoaringBitmap

/** 32-bit Roaring bitmaps in the portable serialization (what `.bin` deletion files hold). */
object PortableBitmaps {
  def toBytes(bitmap: RoaringBitmap): Array[Byte] = {
    val copy = bitmap.clone(); copy.runOptimize()
    val buf = ByteBuffer.allocate(copy.serializedSizeInBytes()); copy.serialize(buf); buf.array()
  }

  def fromBytes(bytes: Array[Byte]): RoaringBitmap = {
    val b = new RoaringBitmap(); b.deserialize(ByteBuffer.wrap(bytes)); b
  }
}
