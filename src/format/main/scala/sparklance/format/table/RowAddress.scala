package sparklance.format.table

/**
 * A Lance row address: the fragment id in the high 32 bits, the row's physical offset in the
 * fragment in the low 32 bits, both unsigned. Offsets travel as Ints (scan batches, RoaringBitmap,
 * which orders its Ints as unsigned), so an offset of 2^31 or more is a negative Int; widening it
 * with `toLong` would smear its sign over the fragment id. Every address is built and taken apart
 * here, so that never happens.
 */
object RowAddress {
  /** The address of row `offset` (an unsigned 32-bit offset held in an Int) of fragment `fragmentId`. */
  def of(fragmentId: Long, offset: Int): Long = (fragmentId << 32) | Integer.toUnsignedLong(offset)

  def fragmentId(address: Long): Long = address >>> 32

  /** The offset, 0 to 2^32 - 1; `offset(a).toInt` is the Int a RoaringBitmap of offsets holds. */
  def offset(address: Long): Long = address & 0xFFFFFFFFL
}
