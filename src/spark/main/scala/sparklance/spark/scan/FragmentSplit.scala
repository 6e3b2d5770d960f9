package sparklance.spark.scan

import org.roaringbitmap.RoaringBitmap

/**
 * Physical rows [start, end) of one fragment (its DataFragment message as bytes), less its
 * deleted rows; for change data, the rows `change` names instead, deleted or not. `within`
 * (portable Roaring bytes) holds the only offsets that may be read, where data skipping ruled the
 * others out or `_rowid` predicates named them.
 */
final case class FragmentSplit(fragment: Array[Byte], start: Long, end: Long,
    change: Option[ChangeSlice] = None, within: Option[Array[Byte]] = None)

object FragmentSplit {
  /**
   * The physical rows [start, end) from the first to the last offset of a non-empty `rows`, which
   * Roaring holds as Ints ordered unsigned: offsets of 2^31 and more are negative Ints.
   */
  def span(rows: RoaringBitmap): (Long, Long) = (Integer.toUnsignedLong(rows.first()), Integer.toUnsignedLong(rows.last()) + 1)
}
