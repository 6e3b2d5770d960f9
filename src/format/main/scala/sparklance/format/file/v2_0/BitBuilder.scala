package sparklance.format.file.v2_0

import org.apache.arrow.memory.ArrowBuf

/** A growable LSB-first bitmap: pending validity or bool values of one page. */
private[v2_0] final class BitBuilder {
  private val bytes = new ByteBuilder
  private var bits = 0L

  def size: Long = bits
  def array: Array[Byte] = bytes.array
  def byteSize: Int = bytes.size
  def clear(): Unit = { bytes.clear(); bits = 0 }

  def appendOnes(n: Long): Unit = {
    bytes.growTo(Bits.bytesFor(bits + n))
    Bits.setOnes(bytes.array, bits, n)
    bits += n
  }

  /** Appends bits `[from, from + n)` of an Arrow bitmap and returns how many of them are set. */
  def appendFrom(src: ArrowBuf, from: Long, n: Long): Long = {
    if (n == 0) return 0
    val first = from >>> 3
    val chunk = new Array[Byte](Bits.bytesFor((from & 7) + n))
    src.getBytes(first, chunk, 0, chunk.length)
    bytes.growTo(Bits.bytesFor(bits + n))
    Bits.copy(chunk, from & 7, bytes.array, bits, n)
    bits += n
    Bits.countOnes(chunk, from & 7, n)
  }

  def isSet(i: Long): Boolean = Bits.get(bytes.array, i)
}
