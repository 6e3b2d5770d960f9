package sparklance.format.skipping

import scala.collection.mutable.ArrayBuffer

/**
 * Cuts the live rows of one fragment, fed in offset order, into zones of `rowsPerZone` rows and
 * summarizes each as pylance does (LANCE-SCALAR-INDICES.md §2.2, §2.3): the span from the first
 * to the last row's offset, nulls ignored by the bounds, NaN ignored by `min` and `max` NaN when
 * the zone holds one. Bounds of floating point keep the lower of -0.0 and 0.0 as `min` and the
 * higher as `max`, so the zone contains them under either order of zeros.
 */
final class ZoneBuilder(fragmentId: Long, rowsPerZone: Long) {
  require(rowsPerZone > 0, s"rows per zone must be positive, got $rowsPerZone")
  private val zones = ArrayBuffer.empty[Zone]
  private var start, last, rows, nulls, nans = 0L
  private var min, max: Option[ZoneValue] = None

  def add(offset: Long, value: Option[ZoneValue]): Unit = {
    if (rows == 0) start = offset
    last = offset
    rows += 1
    value match {
      case None => nulls += 1
      case Some(v) if ZoneValue.isNaN(v) => nans += 1
      case Some(v) =>
        if (min.forall(m => ZoneBuilder.lower(v, m))) min = Some(v)
        if (max.forall(m => ZoneBuilder.lower(m, v))) max = Some(v)
    }
    if (rows == rowsPerZone) close()
  }

  private def close(): Unit = if (rows > 0) {
    val top = if (nans > 0) Some(ZoneValue.Floating(Double.NaN)) else max.flatMap(ZoneBounds.upper)
    zones += Zone(fragmentId, start, last - start + 1, min.map(ZoneBounds.lower), top, nulls, nans)
    rows = 0; nulls = 0; nans = 0; min = None; max = None
  }

  /** The zones of every row added. */
  def result(): Seq[Zone] = { close(); zones.toSeq }
}

object ZoneBuilder {
  /** `a` below `b`: Spark's order, except that -0.0 is below 0.0 (a total order of doubles). */
  private[skipping] def lower(a: ZoneValue, b: ZoneValue): Boolean = (a, b) match {
    case (ZoneValue.Floating(x), ZoneValue.Floating(y)) => java.lang.Double.compare(x, y) < 0
    case _ => ZoneValue.compare(a, b).exists(_ < 0)
  }
}
