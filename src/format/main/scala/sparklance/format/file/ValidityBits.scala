package sparklance.format.file

import org.apache.arrow.memory.ArrowBuf
import org.apache.arrow.vector.BitVectorHelper

/** Runs of an Arrow validity buffer's bits set at once, for rows copied or written together. */
object ValidityBits {
  /** Sets bits `[at, at + n)` of `to`: whole bytes at once, bit by bit at either end. */
  def setRange(to: ArrowBuf, at: Int, n: Int): Unit = {
    val end = at + n
    var i = at
    while (i < end && (i & 7) != 0) { BitVectorHelper.setBit(to, i); i += 1 }
    val bytes = (end - i) / 8
    if (bytes > 0) { to.setOne(i / 8, bytes); i += bytes * 8 }
    while (i < end) { BitVectorHelper.setBit(to, i); i += 1 }
  }
}
