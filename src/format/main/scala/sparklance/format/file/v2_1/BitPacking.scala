package sparklance.format.file.v2_1

import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, InlineBitpacking, OutOfLineBitpacking}

/**
 * FastLanes bit-packing on the write side (LANCE-FILE-2.1-2.2.md §9.3), the inverse of
 * FastLanes.unpack: 1024 values of T bits become `1024·W/T` T-bit words, value
 * `ORDER[row / 8]·16 + (row % 8)·128 + lane` being the `row`-th W-bit field of lane `lane`.
 */
private[v2_1] object BitPacking {
  private val Order = Array(0, 4, 2, 6, 1, 5, 3, 7)

  /**
   * Appends the packed block of `values(from until from + n)` (n ≤ 1024, zero-padded to 1024),
   * each taken as an unsigned T-bit pattern, at packed width w: 128·w bytes.
   */
  def pack(values: Array[Long], from: Int, n: Int, w: Int, t: Int, out: ByteSink): Unit = {
    if (w == 0) return
    val lanes = 1024 / t
    val words = new Array[Long](lanes * w)
    val mask = if (w == 64) -1L else (1L << w) - 1
    var row = 0
    while (row < t) {
      val start = row * w
      val k = start / t
      val off = start % t
      val straddles = off + w > t
      val base = Order(row >>> 3) * 16 + (row & 7) * 128
      var lane = 0
      while (lane < lanes) {
        val i = base + lane
        if (i < n) {
          val v = values(from + i) & mask
          words(lanes * k + lane) |= v << off
          if (straddles) words(lanes * (k + 1) + lane) |= v >>> (t - off)
        }
        lane += 1
      }
      row += 1
    }
    val bytes = t / 8
    out.ensure(words.length.toLong * bytes)
    var j = 0
    while (j < words.length) { Bytes.putN(out.array, out.size, bytes, words(j)); out.size += bytes; j += 1 }
  }

  /** The bit width of the largest of `values(from until to)` as unsigned T-bit patterns. */
  def width(values: Array[Long], from: Int, to: Int, t: Int): Int = {
    val m = if (t == 64) -1L else (1L << t) - 1
    var or = 0L
    var i = from
    while (i < to) { or |= values(i) & m; i += 1 }
    LE.bitLength(or)
  }

  /** `[W as a T-bit integer][packed block]` for up to 1024 values: one inline-bitpacked chunk. */
  def inlineChunk(values: Array[Long], from: Int, n: Int, t: Int, w: Int, out: ByteSink): Unit = {
    LE.uN(out, w.toLong, t / 8)
    pack(values, from, n, w, t, out)
  }

  def inlineEncoding(t: Int): CompressiveEncoding =
    CompressiveEncoding.newBuilder().setInlineBitpacking(InlineBitpacking.newBuilder().setUncompressedBitsPerValue(t.toLong)).build()

  def outOfLineEncoding(t: Int, w: Int): CompressiveEncoding =
    CompressiveEncoding.newBuilder().setOutOfLineBitpacking(OutOfLineBitpacking.newBuilder()
      .setUncompressedBitsPerValue(t.toLong).setValues(PageEncoding.flat(w))).build()

  /**
   * Out-of-line bit-packing block form at fixed width w: full blocks of 1024, then a tail of t
   * values packed as a padded block when t > 1024·w/T and stored raw otherwise (the reader tells
   * them apart by length).
   */
  def outOfLine(values: Array[Long], from: Int, to: Int, w: Int, t: Int, out: ByteSink): Unit = {
    var a = from
    while (to - a >= 1024) { pack(values, a, 1024, w, t, out); a += 1024 }
    val tail = to - a
    if (tail > 0) {
      if (tail.toLong * t > 1024L * w) pack(values, a, tail, w, t, out)
      else { var i = a; while (i < to) { LE.uN(out, values(i), t / 8); i += 1 } }
    }
  }
}
