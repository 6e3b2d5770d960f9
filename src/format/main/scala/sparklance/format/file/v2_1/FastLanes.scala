package sparklance.format.file.v2_1

/**
 * FastLanes bit-unpacking of 1024-value blocks (LANCE-FILE-2.1-2.2.md §9.3): value
 * `ORDER[row / 8]·16 + (row % 8)·128 + lane` is the `row`-th w-bit field of lane `lane`'s bit
 * stream, whose words are `LANES·k + lane` (T-bit words, T = `bits`).
 */
private[v2_1] object FastLanes {
  private val Order = Array(0, 4, 2, 6, 1, 5, 3, 7)

  /** Bytes one packed block of 1024 values takes. */
  def blockBytes(w: Int, bits: Int): Int = 128 * w

  /**
   * Unpacks `n` (≤ 1024) values of the block at `src(from)` into `out` at value index `outIndex`
   * (little-endian, `bits/8` bytes per value). The caller checks that the block is in bounds.
   */
  def unpack(src: Array[Byte], from: Int, w: Int, bits: Int, n: Int, out: Array[Byte], outIndex: Int): Unit = {
    if (w == 0) return
    val bytes = bits / 8
    val lanes = 1024 / bits
    val mask = if (w == 64) -1L else (1L << w) - 1
    // Each value is a shift and a mask of one or two words, read in place at their width; values
    // are stored whole. (Reading words into an array first, and storing a byte at a time, were
    // the top frames of a JFR profile of scans.)
    var row = 0
    while (row < bits) {
      val start = row * w
      val k = start / bits
      val off = start % bits
      val straddles = off + w > bits
      val base = Order(row >>> 3) * 16 + (row & 7) * 128
      val first = from + lanes * k * bytes
      val next = first + lanes * bytes
      val last = math.min(lanes, n - base)
      var lane = 0
      while (lane < last) {
        var v = word(src, first + lane * bytes, bytes) >>> off
        if (straddles) v |= word(src, next + lane * bytes, bytes) << (bits - off)
        put(out, (outIndex + base + lane) * bytes, bytes, v & mask)
        lane += 1
      }
      row += 1
    }
  }

  /**
   * Value `index` (< 1024) of the packed block at `src(from)`, alone: the inverse of the layout
   * above (`Order` is its own inverse), so that a few rows of a block cost a few word reads.
   */
  def valueAt(src: Array[Byte], from: Int, w: Int, bits: Int, index: Int): Long = {
    if (w == 0) return 0L
    val bytes = bits / 8
    val lanes = 1024 / bits
    val inGroup = index & 127
    val lane = inGroup % lanes
    val row = Order((inGroup - lane) >>> 4) * 8 + (index >>> 7)
    val start = row * w
    val off = start % bits
    val at = from + (lanes * (start / bits) + lane) * bytes
    var v = word(src, at, bytes) >>> off
    if (off + w > bits) v |= word(src, at + lanes * bytes, bytes) << (bits - off)
    if (w == 64) v else v & ((1L << w) - 1)
  }

  /** The unsigned little-endian word of `bytes` bytes at `at`. */
  private def word(src: Array[Byte], at: Int, bytes: Int): Long = bytes match {
    case 1 => src(at) & 0xffL
    case 2 => ByteArrayWords.u16(src, at)
    case 4 => ByteArrayWords.u32(src, at)
    case _ => ByteArrayWords.i64(src, at)
  }

  private def put(out: Array[Byte], at: Int, bytes: Int, v: Long): Unit = bytes match {
    case 1 => out(at) = v.toByte
    case 2 => ByteArrayWords.put16(out, at, v)
    case 4 => ByteArrayWords.put32(out, at, v)
    case _ => ByteArrayWords.put64(out, at, v)
  }
}
