package sparklance.format.file.v2_0

/**
 * LSB-first bitmaps (Arrow validity and bool layout, also Lance's flat1) in byte arrays. Work is
 * done 8 bits at a time so that copies between unaligned positions stay cheap.
 */
private[v2_0] object Bits {
  def bytesFor(bits: Long): Int = Math.toIntExact((bits + 7) >>> 3)

  def get(a: Array[Byte], bit: Long): Boolean = ((a((bit >>> 3).toInt) >>> (bit & 7).toInt) & 1) != 0

  /** Copies `n` bits from `src` at `srcBit` to `dst` at `dstBit`. */
  def copy(src: Array[Byte], srcBit: Long, dst: Array[Byte], dstBit: Long, n: Long): Unit =
    if ((srcBit & 7) == 0 && (dstBit & 7) == 0) {
      val whole = (n >>> 3).toInt
      System.arraycopy(src, (srcBit >>> 3).toInt, dst, (dstBit >>> 3).toInt, whole)
      val rest = (n & 7).toInt
      if (rest > 0) put(dst, dstBit + 8L * whole, src((srcBit >>> 3).toInt + whole) & 0xff, rest)
    } else {
      var k = 0L
      while (k < n) {
        val m = math.min(8L, n - k).toInt
        put(dst, dstBit + k, get8(src, srcBit + k), m)
        k += 8
      }
    }

  def setOnes(dst: Array[Byte], dstBit: Long, n: Long): Unit = {
    var k = 0L
    while (k < n) {
      put(dst, dstBit + k, 0xff, math.min(8L, n - k).toInt)
      k += 8
    }
  }

  def countOnes(a: Array[Byte], bit: Long, n: Long): Long = {
    var ones = 0L
    var k = 0L
    while (k < n) {
      val m = math.min(8L, n - k).toInt
      ones += Integer.bitCount(get8(a, bit + k) & ((1 << m) - 1))
      k += 8
    }
    ones
  }

  /** The 8 bits starting at `bit`; bits past the end of the array read as 0. */
  private def get8(a: Array[Byte], bit: Long): Int = {
    val i = (bit >>> 3).toInt
    val shift = (bit & 7).toInt
    val lo = (a(i) & 0xff) >>> shift
    if (shift == 0 || i + 1 >= a.length) lo else (lo | ((a(i + 1) & 0xff) << (8 - shift))) & 0xff
  }

  /** Stores the low `m` (1..8) bits of `bits` at `bit`, leaving the neighbouring bits alone. */
  private def put(a: Array[Byte], bit: Long, bits: Int, m: Int): Unit = {
    val i = (bit >>> 3).toInt
    val shift = (bit & 7).toInt
    val mask = ((1 << m) - 1) << shift
    val v = bits << shift
    a(i) = ((a(i) & ~mask) | (v & mask)).toByte
    if (shift + m > 8) a(i + 1) = ((a(i + 1) & ~(mask >>> 8)) | ((v >>> 8) & (mask >>> 8))).toByte
  }
}
