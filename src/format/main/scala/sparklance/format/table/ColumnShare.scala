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
  def of(schema: LanceSchema, columns: Set[String], bytesPerRow: Double): Double = {
    val widths = schema.fields.map(f => f.name -> width(f.toArrow))
    val fixed = widths.flatMap(_._2).sum
    val variable = widths.count(_._2.isEmpty)
    val perVariable = if (variable == 0) 0.0 else math.max(bytesPerRow - fixed, 8.0 * variable) / variable
    val bytes = widths.map { case (name, w) => name -> w.getOrElse(perVariable) }
    val total = bytes.map(_._2).sum
    if (total <= 0) 1.0 else bytes.filter(b => columns(b._1)).map(_._2).sum / total
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
