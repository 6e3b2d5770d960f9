package sparklance.spark.layout

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types.DataType

/**
 * A row's place on a Z-order curve through the columns at `ordinals`: each value becomes its rank
 * among the column's `boundaries` (quantiles of a sample, in Spark's order for the type; NULL ranks
 * first), and the ranks' bits are interleaved, most significant first, into a non-negative long.
 * Ranks rather than raw bits, so that columns of different ranges and distributions weigh alike
 * (as Delta's Z-order does).
 */
final case class ZOrderKey(ordinals: Seq[Int], types: Seq[DataType], boundaries: Seq[Array[Any]]) {
  require(ordinals.nonEmpty && ordinals.size == types.size && types.size == boundaries.size)

  private val bits = ZOrderKey.bitsPerColumn(ordinals.size)
  @transient private lazy val orderings = types.map(TypeUtils.getInterpretedOrdering)

  def of(row: InternalRow): Long = {
    val ranks = new Array[Long](ordinals.size)
    var c = 0
    while (c < ranks.length) {
      ranks(c) = if (row.isNullAt(ordinals(c))) 0L else 1L + upperBound(boundaries(c), row.get(ordinals(c), types(c)), orderings(c))
      c += 1
    }
    var key = 0L
    var bit = bits - 1
    while (bit >= 0) {
      c = 0
      while (c < ranks.length) { key = (key << 1) | ((ranks(c) >>> bit) & 1L); c += 1 }
      bit -= 1
    }
    key
  }

  /** How many boundaries are at or below `v`. */
  private def upperBound(sorted: Array[Any], v: Any, ordering: Ordering[Any]): Long = {
    var lo = 0
    var hi = sorted.length
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (ordering.lteq(sorted(mid), v)) lo = mid + 1 else hi = mid
    }
    lo
  }
}

object ZOrderKey {
  /** At most 10 bits (1,024 ranks) a column, fewer when more columns must share 63 bits. */
  def bitsPerColumn(columns: Int): Int = math.min(10, 63 / columns)

  /** How many boundaries a column of a `columns`-column key has: rank 0 is NULL's, one rank more than boundaries. */
  def boundaryCount(columns: Int): Int = (1 << bitsPerColumn(columns)) - 2

  /** `count` boundaries at evenly spaced quantiles of `sorted` values (fewer when values repeat). */
  def quantiles(sorted: IndexedSeq[Any], count: Int, ordering: Ordering[Any]): Array[Any] = {
    if (sorted.isEmpty) return Array.empty
    val picked = (1 to count).map(j => sorted(math.min(sorted.size - 1, (j.toLong * sorted.size / (count + 1)).toInt)))
    picked.foldLeft(Vector.empty[Any])((acc, v) => if (acc.nonEmpty && ordering.equiv(acc.last, v)) acc else acc :+ v).toArray
  }
}
