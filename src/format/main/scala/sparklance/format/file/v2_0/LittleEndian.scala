package sparklance.format.file.v2_0

import sparklance.format.file.v2_1.ByteArrayWords

/**
 * u64 access to little-endian byte arrays (page buffers are little-endian throughout): one load
 * or store each, not eight (a 2.0 string page's end offsets are read through it, every row).
 */
private[v2_0] object LittleEndian {
  def getLong(a: Array[Byte], at: Int): Long = ByteArrayWords.i64(a, at)

  def putLong(a: Array[Byte], at: Int, v: Long): Unit = ByteArrayWords.put64(a, at, v)
}
