package sparklance.format.file.v2_0

import org.apache.arrow.vector.{BaseLargeVariableWidthVector, BaseVariableWidthVector, FieldVector}
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/**
 * string / binary (32- or 64-bit offsets) as `binary{nn(flat64) end offsets, flat8 bytes, adj}`
 * (§2.5). A null row stores its end + adj, and adj (total bytes + 1) is only known once the page
 * is complete, so null rows are remembered and adjusted in `encode`.
 */
private[v2_0] final class BinaryBuilder extends ValueBuilder {
  private val ends = new ByteBuilder
  private val bytes = new ByteBuilder
  private val validity = new BitBuilder
  private var nulls = 0L

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    val offsets = v.getOffsetBuffer
    val large = v match {
      case _: BaseLargeVariableWidthVector => true
      case _: BaseVariableWidthVector => false
      case other => throw new IllegalArgumentException(s"Expected a string or binary vector, got ${other.getClass.getSimpleName}")
    }
    def offset(i: Int): Long = if (large) offsets.getLong(i * 8L) else offsets.getInt(i * 4L).toLong
    val start = offset(from)
    val base = bytes.size - start
    var i = from
    while (i < from + count) {
      ends.appendLong(base + offset(i + 1))
      i += 1
    }
    bytes.appendFrom(v.getDataBuffer, start, offset(from + count) - start)
    if (v.getNullCount == 0) validity.appendOnes(count)
    else nulls += count - validity.appendFrom(v.getValidityBuffer, from, count)
  }

  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding =
    if (validity.size == 0) ArrayEncodings.allNulls
    else {
      val adjustment = bytes.size + 1L
      if (nulls > 0) {
        var row = 0
        while (row < validity.size) {
          if (!validity.isSet(row)) ends.setLong(row * 8, ends.getLong(row * 8) + adjustment)
          row += 1
        }
      }
      buffers += PageBuffer(ends.array, ends.size)
      val indices = ArrayEncodings.noNulls(ArrayEncodings.flat(64, buffers.size - 1))
      buffers += PageBuffer(bytes.array, bytes.size)
      ArrayEncodings.binary(indices, ArrayEncodings.flat(8, buffers.size - 1), adjustment)
    }

  def reset(): Unit = { ends.clear(); bytes.clear(); validity.clear(); nulls = 0 }
}
