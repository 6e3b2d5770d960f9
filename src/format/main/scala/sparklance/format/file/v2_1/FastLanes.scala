package sparklance.format.file.v2_1

import java.lang.invoke.MethodHandles
import java.nio.ByteOrder

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

  private val Shorts = MethodHandles.byteArrayViewVarHandle(classOf[Array[Short]], ByteOrder.LITTLE_ENDIAN)
  private val Ints = MethodHandles.byteArrayViewVarHandle(classOf[Array[Int]], ByteOrder.LITTLE_ENDIAN)
  private val Longs = MethodHandles.byteArrayViewVarHandle(classOf[Array[Long]], ByteOrder.LITTLE_ENDIAN)

  /** The unsigned little-endian word of `bytes` bytes at `at`. */
  private def word(src: Array[Byte], at: Int, bytes: Int): Long = bytes match {
    case 1 => src(at) & 0xffL
    case 2 => (Shorts.get(src, at): Short) & 0xffffL
    case 4 => (Ints.get(src, at): Int) & 0xffffffffL
    case _ => Longs.get(src, at): Long
  }

  private def put(out: Array[Byte], at: Int, bytes: Int, v: Long): Unit = bytes match {
    case 1 => out(at) = v.toByte
    case 2 => Shorts.set(out, at, v.toShort)
    case 4 => Ints.set(out, at, v.toInt)
    case _ => Longs.set(out, at, v)
  }
}
