package sparklance.format.file.v2_0

/** u64 access to little-endian byte arrays (page buffers are little-endian throughout). */
private[v2_0] object LittleEndian {
  def getLong(a: Array[Byte], at: Int): Long = {
    var v = 0L
    var k = 7
    while (k >= 0) { v = (v << 8) | (a(at + k) & 0xffL); k -= 1 }
    v
  }

  def putLong(a: Array[Byte], at: Int, v: Long): Unit = {
    var k = 0
    while (k < 8) { a(at + k) = (v >>> (8 * k)).toByte; k += 1 }
  }
}
