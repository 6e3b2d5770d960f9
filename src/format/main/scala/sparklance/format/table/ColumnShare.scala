package sparklance.format.table

import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field}
import scala.jdk.CollectionConverters._

/**
 * The share of a row's stored bytes some top-level columns take, estimated from the schema and
 * the table's bytes per row: fixed-width columns by their width, the variable-width ones sharing
 * the rest equally. It decides whether writing those columns for every row of a fragment costs
 * less than writing the changed rows whole (see `RewriteMode` in the Spark module).
 */
object ColumnShare {
  def of(schema: LanceSchema, columns: Set[String], bytesPerRow: Double): Double = new Estimate(schema, columns)(bytesPerRow)

  /** The share of `columns` for any bytes per row: the schema's widths taken once, for scans planning many fragments. */
  final class Estimate(schema: LanceSchema, columns: Set[String]) extends (Double => Double) {
    private val widths = schema.fields.map(f => columns(f.name) -> width(f.toArrow))
    private val fixed = widths.flatMap(_._2).sum
    private val fixedRead = widths.collect { case (true, Some(w)) => w }.sum
    private val variable = widths.count(_._2.isEmpty)
    private val variableRead = widths.count { case (read, w) => read && w.isEmpty }

    def apply(bytesPerRow: Double): Double = {
      val perVariable = if (variable == 0) 0.0 else math.max(bytesPerRow - fixed, 8.0 * variable) / variable
      val total = fixed + variable * perVariable
      if (total <= 0) 1.0 else (fixedRead + variableRead * perVariable) / total
    }
  }

  /** Bytes per value of a fixed-width field; None for variable-width ones (strings, binary, lists, maps). */
  private def width(f: Field): Option[Double] = f.getType match {
    case i: ArrowType.Int => Some(i.getBitWidth / 8.0)
    case p: ArrowType.FloatingPoint => Some(p.getPrecision match {
      case FloatingPointPrecision.HALF => 2.0
      case FloatingPointPrecision.SINGLE => 4.0
      case FloatingPointPrecision.DOUBLE => 8.0
    })
    case _: ArrowType.Bool => Some(1.0 / 8)
    case d: ArrowType.Decimal => Some(d.getBitWidth / 8.0)
    case d: ArrowType.Date => Some(if (d.getUnit == DateUnit.DAY) 4.0 else 8.0)
    case _: ArrowType.Timestamp | _: ArrowType.Time | _: ArrowType.Duration => Some(8.0)
    case b: ArrowType.FixedSizeBinary => Some(b.getByteWidth.toDouble)
    case l: ArrowType.FixedSizeList => f.getChildren.asScala.headOption.flatMap(width).map(_ * l.getListSize)
    case _: ArrowType.Struct =>
      val kids = f.getChildren.asScala.map(width)
      if (kids.forall(_.isDefined)) Some(kids.flatten.sum) else None
    case _ => None
  }
}
