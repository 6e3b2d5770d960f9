package sparklance.spark.layout

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types.DataType

/**
 * A row's place on a space-filling `curve` through the columns at `ordinals`: each value becomes
 * its rank among the column's `boundaries` (quantiles of a sample, in Spark's order for the type;
 * NULL ranks first), and the ranks are mapped to one non-negative long along the curve. Ranks
 * rather than raw bits, so that columns of different ranges and distributions weigh alike (as
 * Delta's Z-order and liquid clustering do).
 */
final case class CurveKey(curve: Curve, ordinals: Seq[Int], types: Seq[DataType], boundaries: Seq[Array[Any]]) {
  require(ordinals.nonEmpty && ordinals.size == types.size && types.size == boundaries.size)

  private val bits = Curve.bitsPerColumn(ordinals.size)
  @transient private lazy val orderings = types.map(TypeUtils.getInterpretedOrdering)

  // Reused row after row (a task uses its own deserialized instance); the curve may overwrite it.
  @transient private lazy val ranks = new Array[Long](ordinals.size)

  def of(row: InternalRow): Long = {
    val ranks = this.ranks
    var c = 0
    while (c < ranks.length) {
      ranks(c) = if (row.isNullAt(ordinals(c))) 0L else 1L + upperBound(boundaries(c), row.get(ordinals(c), types(c)), orderings(c))
      c += 1
    }
    curve.index(ranks, bits)
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
