package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/** Fixed-width values copied byte for byte from the Arrow data buffer (`bits` = 1: a bitmap). */
private[v2_0] final class FlatBuilder(bits: Int) extends ValueBuilder {
  private val bytes = new ByteBuilder
  private val bitmap = new BitBuilder

  def append(v: FieldVector, from: Int, count: Int): Unit =
    if (bits == 1) bitmap.appendFrom(v.getDataBuffer, from, count)
    else bytes.appendFrom(v.getDataBuffer, from.toLong * (bits / 8), count.toLong * (bits / 8))

  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding = {
    buffers += (if (bits == 1) PageBuffer(bitmap.array, bitmap.byteSize) else PageBuffer(bytes.array, bytes.size))
    ArrayEncodings.flat(bits, buffers.size - 1)
  }

  def reset(): Unit = { bytes.clear(); bitmap.clear() }
}
