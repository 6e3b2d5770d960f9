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
    val bytes = bits / 8
    // Zero bits a value: all zeros, written, as `out` may be a reused array.
    if (w == 0) { java.util.Arrays.fill(out, outIndex * bytes, (outIndex + n) * bytes, 0.toByte); return }
    val lanes = 1024 / bits
    // Each value is a shift and a mask of one or two words, read in place at their width; values
    // are stored whole. (Reading words into an array first, and storing a byte at a time, were
    // the top frames of a JFR profile of scans.)
    var row = 0
    while (row < bits) {
      val start = row * w
      val off = start % bits
      val base = Order(row >>> 3) * 16 + (row & 7) * 128
      val first = from + lanes * (start / bits) * bytes
      val last = math.min(lanes, n - base)
      val at = (outIndex + base) * bytes
      // One loop per width: a loop that chose the word's width per value ran 2.7 times slower
      // (1.35 against 0.5 ns a value) once a scan had unpacked values of several widths.
      bits match {
        case 8 => lanes8(src, first, off, w, last, out, at)
        case 16 => lanes16(src, first, off, w, last, out, at)
        case 32 => lanes32(src, first, off, w, last, out, at)
        case _ => lanes64(src, first, off, w, last, out, at)
      }
      row += 1
    }
  }

  // The `last` lanes of one row of a block: lane l's value starts `off` bits into its word
  // `first + l` and, where it straddles words, ends in the word one row of lanes further.
  private def lanes8(src: Array[Byte], first: Int, off: Int, w: Int, last: Int, out: Array[Byte], at: Int): Unit = {
    val mask = (1 << w) - 1
    val straddles = off + w > 8
    var lane = 0
    while (lane < last) {
      var v = (src(first + lane) & 0xff) >>> off
      if (straddles) v |= (src(first + 128 + lane) & 0xff) << (8 - off)
      out(at + lane) = (v & mask).toByte
      lane += 1
    }
  }

  private def lanes16(src: Array[Byte], first: Int, off: Int, w: Int, last: Int, out: Array[Byte], at: Int): Unit = {
    val mask = (1 << w) - 1
    val straddles = off + w > 16
    var lane = 0
    while (lane < last) {
      var v = ByteArrayWords.u16i(src, first + 2 * lane) >>> off
      if (straddles) v |= ByteArrayWords.u16i(src, first + 128 + 2 * lane) << (16 - off)
      ByteArrayWords.put16(out, at + 2 * lane, v & mask)
      lane += 1
    }
  }

  private def lanes32(src: Array[Byte], first: Int, off: Int, w: Int, last: Int, out: Array[Byte], at: Int): Unit = {
    val mask = if (w == 32) -1 else (1 << w) - 1
    val straddles = off + w > 32
    var lane = 0
    while (lane < last) {
      var v = ByteArrayWords.i32(src, first + 4 * lane) >>> off
      if (straddles) v |= ByteArrayWords.i32(src, first + 128 + 4 * lane) << (32 - off)
      ByteArrayWords.put32(out, at + 4 * lane, v & mask)
      lane += 1
    }
  }

  private def lanes64(src: Array[Byte], first: Int, off: Int, w: Int, last: Int, out: Array[Byte], at: Int): Unit = {
    val mask = if (w == 64) -1L else (1L << w) - 1
    val straddles = off + w > 64
    var lane = 0
    while (lane < last) {
      var v = ByteArrayWords.i64(src, first + 8 * lane) >>> off
      if (straddles) v |= ByteArrayWords.i64(src, first + 128 + 8 * lane) << (64 - off)
      ByteArrayWords.put64(out, at + 8 * lane, v & mask)
      lane += 1
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
}
