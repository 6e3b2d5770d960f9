package sparklance.format.index.scalar

import sparklance.format.skipping.ZoneValue

/**
 * The order of keys in BTREE and BITMAP files, and what makes two keys one: null first, then
 * values as [[ZoneValue.compare]] orders them (unsigned bytes for strings), except that floating
 * point values follow Lance's total order: -0.0 before 0.0 (two keys, as pylance keeps them) and
 * NaN after every number, all NaNs one key. A hash map would not do: NaN is not equal to itself.
 */
object ScalarKeyOrdering extends Ordering[Option[ZoneValue]] with Serializable {
  def compare(a: Option[ZoneValue], b: Option[ZoneValue]): Int = (a, b) match {
    case (None, None) => 0
    case (None, _) => -1
    case (_, None) => 1
    case (Some(ZoneValue.Floating(x)), Some(ZoneValue.Floating(y))) => java.lang.Double.compare(x, y)
    case (Some(x), Some(y)) => ZoneValue.compare(x, y).getOrElse(
      throw new IllegalArgumentException(s"index keys $x and $y are of different kinds"))
  }

  /**
   * `d`'s bits as a long whose signed order is this order of doubles (Java's `Double.compare`):
   * negative values' magnitude bits flipped so they count down, -0.0 just below 0.0, and every
   * NaN made the one canonical (positive) NaN, above +Infinity. Equal for two doubles exactly
   * when they are one key, so it can key a hash map or a Spark sort.
   */
  def doubleKey(d: Double): Long = {
    val bits = java.lang.Double.doubleToLongBits(d)
    bits ^ ((bits >> 63) & Long.MaxValue)
  }

  /** Value, then row address: a total order, so a distributed sort is deterministic. */
  val withAddress: Ordering[(Option[ZoneValue], Long)] = Ordering.Tuple2(this, Ordering.Long)
}
