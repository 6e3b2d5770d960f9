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
    def word(k: Int, lane: Int): Long = Bytes.uN(src, from + (lanes * k + lane) * bytes, bytes)
    var row = 0
    while (row < bits) {
      val start = row * w
      val k = start / bits
      val off = start % bits
      val straddles = off + w > bits
      val base = Order(row >>> 3) * 16 + (row & 7) * 128
      var lane = 0
      while (lane < lanes) {
        val i = base + lane
        if (i < n) {
          var v = word(k, lane) >>> off
          if (straddles) v |= word(k + 1, lane) << (bits - off)
          Bytes.putN(out, (outIndex + i) * bytes, bytes, v & mask)
        }
        lane += 1
      }
      row += 1
    }
  }
}
