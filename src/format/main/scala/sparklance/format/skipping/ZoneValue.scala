package sparklance.format.skipping

import java.math.BigDecimal

/**
 * A value as data skipping compares it, in the order Spark SQL sorts the column's type: integers,
 * dates and timestamps as longs (days and microseconds); floating point with NaN above every
 * number and -0.0 equal to 0.0; strings and binary as unsigned bytes (UTF-8 for strings, the
 * order of Spark's default collation); decimals by value; false before true.
 */
sealed trait ZoneValue

object ZoneValue {
  final case class Integral(value: Long) extends ZoneValue
  final case class Floating(value: Double) extends ZoneValue
  final case class Bytes(value: Array[Byte]) extends ZoneValue {
    override def equals(other: Any): Boolean = other match {
      case Bytes(v) => java.util.Arrays.equals(value, v)
      case _ => false
    }
    override def hashCode(): Int = java.util.Arrays.hashCode(value)
    override def toString: String = s"Bytes(${new String(value, java.nio.charset.StandardCharsets.UTF_8)})"
  }
  final case class Decimal(value: BigDecimal) extends ZoneValue
  final case class Bool(value: Boolean) extends ZoneValue

  /**
   * The order of two values of one kind; None for values of different kinds, which data skipping
   * treats as not comparable (and so never prunes by).
   */
  def compare(a: ZoneValue, b: ZoneValue): Option[Int] =
    if (a.getClass eq b.getClass) Some(OneKind.compare(a, b)) else None

  /**
   * The order of values of one kind, without an `Option` per comparison: sorting a MERGE's
   * 100,000 source keys through [[compare]] took most of the driver's time handing them to the scan.
   */
  object OneKind extends Ordering[ZoneValue] {
    override def compare(a: ZoneValue, b: ZoneValue): Int = (a, b) match {
      case (Integral(x), Integral(y)) => java.lang.Long.compare(x, y)
      case (Floating(x), Floating(y)) => compareDoubles(x, y)
      case (Bytes(x), Bytes(y)) => java.util.Arrays.compareUnsigned(x, y)
      case (Decimal(x), Decimal(y)) => x.compareTo(y)
      case (Bool(x), Bool(y)) => java.lang.Boolean.compare(x, y)
      case _ => throw new IllegalArgumentException(s"$a and $b are values of different kinds")
    }
  }

  /** Spark's order of doubles: NaN is the largest value and equals itself; -0.0 equals 0.0. */
  private def compareDoubles(x: Double, y: Double): Int =
    if (x.isNaN) { if (y.isNaN) 0 else 1 }
    else if (y.isNaN) -1
    else if (x == y) 0 // -0.0 == 0.0
    else java.lang.Double.compare(x, y)

  def isNaN(v: ZoneValue): Boolean = v match {
    case Floating(x) => x.isNaN
    case _ => false
  }
}
