package sparklance.format.file.v2_0

import org.apache.arrow.memory.ArrowBuf
import sparklance.format.UnsupportedFeatureException

/** A growable little-endian byte buffer holding one pending page buffer of the writer. */
private[v2_0] final class ByteBuilder {
  private var buf = new Array[Byte](256)
  private var len = 0

  def size: Int = len
  def array: Array[Byte] = buf
  def clear(): Unit = len = 0

  private def reserve(extra: Long): Unit = {
    val need = len + extra
    if (need > ByteBuilder.MaxSize)
      throw new UnsupportedFeatureException(s"A Lance 2.0 page buffer would exceed ${ByteBuilder.MaxSize} bytes; a single row is too large")
    if (need > buf.length) buf = java.util.Arrays.copyOf(buf, math.min(ByteBuilder.MaxSize, math.max(need, 2L * buf.length)).toInt)
  }

  def appendFrom(src: ArrowBuf, srcIndex: Long, n: Long): Unit = {
    reserve(n)
    src.getBytes(srcIndex, buf, len, n.toInt)
    len += n.toInt
  }

  def appendLong(v: Long): Unit = {
    reserve(8)
    LittleEndian.putLong(buf, len, v)
    len += 8
  }

  def getLong(index: Int): Long = LittleEndian.getLong(buf, index)
  def setLong(index: Int, v: Long): Unit = LittleEndian.putLong(buf, index, v)

  /** Grows to `bytes` bytes, zero-filling new space (used by the bit builder). */
  def growTo(bytes: Int): Unit = if (bytes > len) {
    reserve(bytes - len)
    java.util.Arrays.fill(buf, len, bytes, 0.toByte)
    len = bytes
  }
}

private[v2_0] object ByteBuilder {
  private val MaxSize = Int.MaxValue - 64L
}
