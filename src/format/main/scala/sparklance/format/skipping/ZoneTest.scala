package sparklance.format.skipping

import sparklance.format.skipping.ColumnFilter._
import sparklance.format.skipping.ColumnFilter.CompareOp._

/**
 * Whether a zone may hold a row a filter on its column keeps. It answers false only when the
 * zone's statistics prove that no row can match; anything it cannot judge is kept.
 */
object ZoneTest {
  /** The values of a zone as far as comparisons go. */
  private sealed trait Values
  /** Nulls only (no value a comparison can match). */
  private case object NoValues extends Values
  /** Non-null values within [lo, hi] in Spark's order. */
  private final case class Within(lo: ZoneValue, hi: ZoneValue) extends Values
  /** Bounds this test does not understand: keep the zone. */
  private case object Unknown extends Values

  private def values(zone: Zone): Values = (zone.min, zone.max) match {
    // Bounds out of Spark's order (another writer's order of NaN, say) tell nothing.
    case (Some(lo), Some(hi)) if ZoneValue.compare(lo, hi).forall(_ > 0) => Unknown
    case (Some(lo), Some(hi)) => Within(lo, hi)
    case (None, Some(hi)) if ZoneValue.isNaN(hi) => Within(hi, hi) // NaN and nulls only
    case (None, None) if zone.nanCount == 0 => NoValues
    case _ => Unknown
  }

  /** `filter` reads only the zone's column and holds no NOT ([[ColumnFilter.negationFree]]). */
  def mightMatch(zone: Zone, filter: ColumnFilter): Boolean = filter match {
    case Compare(_, op, value) => matches(values(zone))(compare(op, _, _, value))
    case in: In => matches(values(zone))(in.anyWithin)
    // Skipped only when every value equals `value`.
    case NotEqual(_, value) => matches(values(zone))((lo, hi) => !(same(lo, value) && same(hi, value)))
    case StartsWith(_, prefix) => matches(values(zone)) {
      case (ZoneValue.Bytes(lo), ZoneValue.Bytes(hi)) =>
        java.util.Arrays.compareUnsigned(hi, prefix) >= 0 &&
          (java.util.Arrays.compareUnsigned(lo, prefix) <= 0 || lo.startsWith(prefix))
      case _ => true
    }
    case IsNull(_) => zone.nullCount > 0
    // The span counts deleted rows too: only a span of nulls alone has no other value.
    case IsNotNull(_) => zone.nullCount < zone.length
    // No token matches a null text.
    case TextMatch(_, _, _, _) => zone.nullCount < zone.length
    case _ => true
  }

  /**
   * Whether every live row of the zone passes `filter` (a test on the zone's column without NOT):
   * true only when its statistics prove it. Tests of values need a zone without nulls (a null
   * passes none of them), whose bounds then hold every value in Spark's order (NaN, the largest
   * value, is the max of a zone holding one).
   */
  def allMatch(zone: Zone, filter: ColumnFilter): Boolean = {
    def valuesOnly(within: (ZoneValue, ZoneValue) => Boolean): Boolean = zone.nullCount == 0 && (values(zone) match {
      case Within(lo, hi) => within(lo, hi)
      case _ => false
    })
    filter match {
      case Compare(_, op, value) => valuesOnly((lo, hi) => (ZoneValue.compare(lo, value), ZoneValue.compare(hi, value)) match {
        case (Some(l), Some(h)) => op match {
          case Equal => l == 0 && h == 0
          case Less => h < 0
          case LessOrEqual => h <= 0
          case Greater => l > 0
          case GreaterOrEqual => l >= 0
        }
        case _ => false
      })
      case NotEqual(_, value) => valuesOnly((lo, hi) => ZoneValue.compare(hi, value).exists(_ < 0) || ZoneValue.compare(lo, value).exists(_ > 0))
      case In(_, candidates) => valuesOnly((lo, hi) => same(lo, hi) && candidates.exists(same(_, lo)))
      // The values starting with a prefix are one interval of the byte order.
      case StartsWith(_, prefix) => valuesOnly {
        case (ZoneValue.Bytes(lo), ZoneValue.Bytes(hi)) => lo.startsWith(prefix) && hi.startsWith(prefix)
        case _ => false
      }
      // The span counts deleted rows too, which the null count does not: only a span of nulls alone is proven.
      case IsNull(_) => zone.nullCount == zone.length
      case IsNotNull(_) => zone.nullCount == 0
      case _ => false
    }
  }

  private def matches(values: Values)(within: (ZoneValue, ZoneValue) => Boolean): Boolean = values match {
    case NoValues => false
    case Within(lo, hi) => within(lo, hi)
    case Unknown => true
  }

  private def same(a: ZoneValue, b: ZoneValue): Boolean = ZoneValue.compare(a, b).contains(0)

  private def compare(op: CompareOp, lo: ZoneValue, hi: ZoneValue, v: ZoneValue): Boolean =
    (ZoneValue.compare(lo, v), ZoneValue.compare(hi, v)) match {
      case (Some(l), Some(h)) => op match {
        case Equal => l <= 0 && h >= 0
        case Less => l < 0
        case LessOrEqual => l <= 0
        case Greater => h > 0
        case GreaterOrEqual => h >= 0
      }
      case _ => true
    }
}
