package sparklance.format.file.v2_1

/**
 * FSST-compressed strings (LANCE-FILE-2.1-2.2.md §9.4): each value is decoded on its own; code
 * c < 255 emits symbol c, code 255 emits the next byte as is.
 */
private[v2_1] final class Fsst(table: Array[Byte], ctx: Ctx) {
  ctx.check(table.length >= 8, s"FSST symbol table of ${table.length} bytes")
  private val header = Bytes.i64(table, 0)
  ctx.check((header >>> 32) == 0x46535354L, "FSST symbol table without its magic")
  private val on = (header & (1L << 24)) != 0
  private val numSymbols = (header & 0xff).toInt
  ctx.check(!on || table.length >= 8 + 9 * numSymbols, s"FSST symbol table of ${table.length} bytes for $numSymbols symbols")
  private val lengths = if (on) Array.tabulate(numSymbols)(s => table(8 + 8 * numSymbols + s) & 0xff) else Array.emptyIntArray
  ctx.check(lengths.forall(l => l >= 1 && l <= 8), "FSST symbol of a length outside 1..8")

  /** The decoded length of `src(from until to)`. */
  def decodedLength(src: Array[Byte], from: Int, to: Int): Long = {
    if (!on) return to - from
    var len = 0L
    var at = from
    while (at < to) {
      val code = src(at) & 0xff
      if (code == 255) { ctx.check(at + 1 < to, "FSST escape at the end of a value"); len += 1; at += 2 }
      else { ctx.check(code < numSymbols, s"FSST code $code, but the table has $numSymbols symbols"); len += lengths(code); at += 1 }
    }
    len
  }

  /** Decodes `src(from until to)` into `out` at `pos`; returns the new position. */
  def decodeInto(src: Array[Byte], from: Int, to: Int, out: Array[Byte], pos0: Int): Int = {
    if (!on) { System.arraycopy(src, from, out, pos0, to - from); return pos0 + to - from }
    var pos = pos0
    var at = from
    while (at < to) {
      val code = src(at) & 0xff
      if (code == 255) { out(pos) = src(at + 1); pos += 1; at += 2 }
      else { System.arraycopy(table, 8 + 8 * code, out, pos, lengths(code)); pos += lengths(code); at += 1 }
    }
    pos
  }

  def decode(v: Slots.Variable): Slots.Variable = {
    if (!on) return v
    val n = v.count
    val offsets = new Array[Long](n + 1)
    var i = 0
    while (i < n) { offsets(i + 1) = offsets(i) + decodedLength(v.data, v.offsets(i).toInt, v.offsets(i + 1).toInt); i += 1 }
    val out = new Array[Byte](Math.toIntExact(offsets(n)))
    i = 0
    while (i < n) { decodeInto(v.data, v.offsets(i).toInt, v.offsets(i + 1).toInt, out, offsets(i).toInt); i += 1 }
    Slots.Variable(offsets, out, n)
  }
}
