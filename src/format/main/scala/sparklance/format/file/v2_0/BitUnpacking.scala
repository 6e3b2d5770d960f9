package sparklance.format.file.v2_0

/**
 * The two bit-packed layouts a 2.0 page may use (§2.12); both unpack into little-endian values of
 * `outBits` bits, the Arrow layout.
 */
private[v2_0] object BitUnpacking {
  /** Bytes `bitpacked` needs for n values of w bits: one contiguous LSB-first bit string. */
  def contiguousBytes(n: Int, w: Int): Long = (n.toLong * w + 7) / 8

  def contiguous(src: ByteSlice, n: Int, w: Int, outBits: Int, signed: Boolean): Array[Byte] = {
    val outBytes = outBits / 8
    val out = new Array[Byte](n * outBytes)
    var i = 0
    while (i < n) {
      var v = readBits(src, i.toLong * w, w)
      if (signed && w > 0 && w < 64) v = (v << (64 - w)) >> (64 - w)
      writeLE(out, i * outBytes, outBytes, v)
      i += 1
    }
    out
  }

  private def readBits(src: ByteSlice, bitPos: Long, w: Int): Long = {
    var v = 0L
    var got = 0
    var pos = bitPos
    while (got < w) {
      val shift = (pos & 7).toInt
      val take = math.min(8 - shift, w - got)
      val byte = (src.array(src.offset + (pos >>> 3).toInt) & 0xff) >>> shift
      v |= (byte & ((1L << take) - 1)) << got
      got += take
      pos += take
    }
    v
  }

  private def writeLE(out: Array[Byte], at: Int, bytes: Int, v: Long): Unit = {
    var k = 0
    while (k < bytes) { out(at + k) = (v >>> (8 * k)).toByte; k += 1 }
  }

  private val Order = Array(0, 4, 2, 6, 1, 5, 3, 7)

  /** Bytes `bitpacked_for_non_neg` needs: whole 1024-value blocks of 1024·w bits. */
  def fastLanesBytes(n: Int, w: Int): Long = ((n + 1023L) / 1024) * 128L * w

  /**
   * FastLanes blocks of 1024 values in T-bit words (T = `bits`), as described in
   * LANCE-FILE-2.1-2.2.md §9.3: value `ORDER[row / 8]·16 + (row % 8)·128 + lane` is the `row`-th
   * w-bit field of lane `lane`'s bit stream, lane words being `LANES·k + lane`.
   */
  def fastLanes(src: ByteSlice, n: Int, w: Int, bits: Int): Array[Byte] = {
    val bytes = bits / 8
    val lanes = 1024 / bits
    val out = new Array[Byte](n * bytes)
    val mask = if (w == 64) -1L else (1L << w) - 1
    def word(block: Int, k: Int, lane: Int): Long = {
      val at = src.offset + block * 128 * w + (lanes * k + lane) * bytes
      var v = 0L
      var b = 0
      while (b < bytes) { v |= (src.array(at + b) & 0xffL) << (8 * b); b += 1 }
      v
    }
    var block = 0
    while (block * 1024 < n && w > 0) {
      var row = 0
      while (row < bits) {
        var lane = 0
        while (lane < lanes) {
          val i = block * 1024 + Order(row >>> 3) * 16 + (row & 7) * 128 + lane
          if (i < n) {
            val start = row * w
            val (k, off) = (start / bits, start % bits)
            var v = word(block, k, lane) >>> off
            if (off + w > bits) v |= word(block, k + 1, lane) << (bits - off)
            writeLE(out, i * bytes, bytes, v & mask)
          }
          lane += 1
        }
        row += 1
      }
      block += 1
    }
    out
  }
}
