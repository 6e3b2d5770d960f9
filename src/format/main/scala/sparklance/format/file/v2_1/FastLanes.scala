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
    // The block's words read once, at their width (a generic byte loop per word read was a third
    // of a scan's time in a JFR profile); then each value is a shift and a mask of one or two.
    val words = readWords(src, from, lanes * w, bytes)
    var row = 0
    while (row < bits) {
      val start = row * w
      val k = start / bits
      val off = start % bits
      val straddles = off + w > bits
      val base = Order(row >>> 3) * 16 + (row & 7) * 128
      val first = lanes * k
      var lane = 0
      while (lane < lanes) {
        val i = base + lane
        if (i < n) {
          var v = words(first + lane) >>> off
          if (straddles) v |= words(first + lanes + lane) << (bits - off)
          put(out, (outIndex + i) * bytes, bytes, v & mask)
        }
        lane += 1
      }
      row += 1
    }
  }

  private def readWords(src: Array[Byte], from: Int, count: Int, bytes: Int): Array[Long] = {
    val words = new Array[Long](count)
    var j = 0
    var p = from
    bytes match {
      case 1 => while (j < count) { words(j) = src(p) & 0xffL; p += 1; j += 1 }
      case 2 => while (j < count) { words(j) = Bytes.u16(src, p).toLong; p += 2; j += 1 }
      case 4 => while (j < count) { words(j) = Bytes.u32(src, p); p += 4; j += 1 }
      case _ => while (j < count) { words(j) = Bytes.i64(src, p); p += 8; j += 1 }
    }
    words
  }

  private def put(out: Array[Byte], at: Int, bytes: Int, v: Long): Unit = bytes match {
    case 1 => out(at) = v.toByte
    case 2 => out(at) = v.toByte; out(at + 1) = (v >>> 8).toByte
    case 4 => out(at) = v.toByte; out(at + 1) = (v >>> 8).toByte; out(at + 2) = (v >>> 16).toByte; out(at + 3) = (v >>> 24).toByte
    case _ => var b = 0; while (b < 8) { out(at + b) = (v >>> (8 * b)).toByte; b += 1 }
  }
}
