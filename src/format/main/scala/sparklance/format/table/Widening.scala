package sparklance.format.table

import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType

/**
 * The type changes ALTER COLUMN ... TYPE may make to a column's stored values: those that keep
 * every value exactly, within one family (Lance casts within a family too, but also narrows,
 * which loses values): signed integers to wider ones, float to double, and decimals to more
 * integer and fraction digits.
 */
object Widening {
  /** None when values of `from` keep their meaning as `to`, else why not. */
  def refusal(from: ArrowType, to: ArrowType): Option[String] = (from, to) match {
    case (a: ArrowType.Int, b: ArrowType.Int) if a.getIsSigned && b.getIsSigned =>
      if (b.getBitWidth > a.getBitWidth) None else Some(s"${b.getBitWidth}-bit integers cannot hold every ${a.getBitWidth}-bit value")
    case (_: ArrowType.Int, _: ArrowType.Int) => Some("only signed integers are widened")
    case (a: ArrowType.FloatingPoint, b: ArrowType.FloatingPoint) =>
      if (a.getPrecision == FloatingPointPrecision.SINGLE && b.getPrecision == FloatingPointPrecision.DOUBLE) None
      else Some("only FLOAT widens, to DOUBLE")
    case (a: ArrowType.Decimal, b: ArrowType.Decimal) =>
      if (b.getBitWidth != 128 || a.getBitWidth != 128) Some("only 128-bit decimals are widened")
      else if (b.getScale < a.getScale) Some(s"a scale of ${b.getScale} drops digits of the fraction (scale ${a.getScale})")
      else if (b.getPrecision - b.getScale < a.getPrecision - a.getScale) Some("fewer integer digits cannot hold every value")
      else None
    case _ if from == to => Some("the column has this type already")
    case _ => Some(s"values of ${LogicalTypes.toLogical(from, None)} would change meaning as ${LogicalTypes.toLogical(to, None)} " +
      "(types change within a family only: integers, floating point, decimals)")
  }
}
