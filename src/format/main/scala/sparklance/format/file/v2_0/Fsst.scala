package sparklance.format.file.v2_0

import sparklance.format.CorruptFileException
import sparklance.format.file.v2_0.Decoded.VariableValues

/**
 * FSST-compressed strings (§2.10, symbol table layout in LANCE-FILE-2.1-2.2.md §9.4): each value
 * is decoded on its own; code c < 255 emits symbol c, code 255 emits the next byte as is.
 */
private[v2_0] object Fsst {
  private val TableSize = 2312
  private val Magic = 0x46535354L

  def decode(compressed: VariableValues, table: Array[Byte], path: String, where: => String): VariableValues = {
    def corrupt(detail: String) = new CorruptFileException(path, s"$where: FSST $detail")
    if (table.length < TableSize) throw corrupt(s"symbol table of ${table.length} bytes")
    val header = LittleEndian.getLong(table, 0)
    if ((header >>> 32) != Magic) throw corrupt("symbol table without its FSST magic")
    if ((header & (1L << 24)) == 0) return compressed // compression was switched off: values are stored raw
    val numSymbols = (header & 0xff).toInt
    val lengths = Array.tabulate(numSymbols)(s => table(8 + 8 * numSymbols + s) & 0xff)
    if (lengths.exists(l => l < 1 || l > 8)) throw corrupt("symbol of a length outside 1..8")

    val n = compressed.length
    def valid(i: Int) = compressed.validity == null || Bits.get(compressed.validity, i)
    // Pass 1 sizes the output so that pass 2 writes straight into one array.
    def walk(i: Int)(emit: (Int, Int) => Unit): Unit = {
      var at = compressed.base + compressed.offsets(i).toInt
      val end = compressed.base + compressed.offsets(i + 1).toInt
      while (at < end) {
        val code = compressed.data(at) & 0xff
        if (code == 255) {
          if (at + 1 >= end) throw corrupt(s"escape code at the end of value $i")
          emit(-1, compressed.data(at + 1) & 0xff)
          at += 2
        } else {
          if (code >= numSymbols) throw corrupt(s"code $code, but the table has $numSymbols symbols")
          emit(code, 0)
          at += 1
        }
      }
    }
    val offsets = new Array[Long](n + 1)
    for (i <- 0 until n) {
      var len = 0L
      if (valid(i)) walk(i)((code, _) => len += (if (code < 0) 1 else lengths(code)))
      offsets(i + 1) = offsets(i) + len
    }
    val out = new Array[Byte](Math.toIntExact(offsets(n)))
    for (i <- 0 until n if valid(i)) {
      var pos = offsets(i).toInt
      walk(i) { (code, literal) =>
        if (code < 0) { out(pos) = literal.toByte; pos += 1 }
        else { System.arraycopy(table, 8 + 8 * code, out, pos, lengths(code)); pos += lengths(code) }
      }
    }
    VariableValues(n, compressed.validity, offsets, out, 0)
  }
}
