package sparklance.format.file.v2_1

import sparklance.format.proto.Encodings21Protos.RepDefLayer

/**
 * The rows of one page of a leaf column, ready to encode: rep levels (null = no lists), def codes
 * (null = everything valid), the layers those codes follow (innermost first), and the value slots
 * `[slotFrom, slotFrom + numSlots)` of `values`, one per visible entry (LANCE-FILE-2.1-2.2.md §4).
 */
private[v2_1] final class PageSpan(
    val rows: Int,
    val rep: Array[Int],
    val defs: Array[Int],
    val numEntries: Int,
    val layers: IndexedSeq[RepDefLayer],
    val maxRep: Int,
    val maxDef: Int,
    val maxVisibleDef: Int,
    val values: ValueSink,
    val slotFrom: Int,
    val numSlots: Int) {

  def visible(i: Int): Boolean = defs == null || defs(i) <= maxVisibleDef

  /** Whether entry i starts a row. */
  def rowStart(i: Int): Boolean = rep == null || rep(i) == maxRep

  /** Whether any slot holds a valid leaf value (def 0). */
  def hasValidValue: Boolean = defs == null || defs.exists(_ == 0)
}

/** Little-endian appends to a ByteSink. */
private[v2_1] object LE {
  def u8(s: ByteSink, v: Int): Unit = { s.ensure(1); s.array(s.size) = v.toByte; s.size += 1 }
  def uN(s: ByteSink, v: Long, bytes: Int): Unit = {
    s.ensure(bytes)
    Bytes.putN(s.array, s.size, bytes, v)
    s.size += bytes
  }
  def u16(s: ByteSink, v: Int): Unit = uN(s, v.toLong, 2)
  def u32(s: ByteSink, v: Long): Unit = uN(s, v, 4)
  def u64(s: ByteSink, v: Long): Unit = uN(s, v, 8)
  /** Pads `s` from `start` to a multiple of `align` bytes with `fill`. */
  def pad(s: ByteSink, start: Int, align: Int, fill: Int): Unit = {
    val n = (align - (s.size - start) % align) % align
    var i = 0
    while (i < n) { u8(s, fill); i += 1 }
  }
  def bitLength(v: Long): Int = 64 - java.lang.Long.numberOfLeadingZeros(v)
}
