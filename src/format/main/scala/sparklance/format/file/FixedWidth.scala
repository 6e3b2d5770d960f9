package sparklance.format.file

import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision}
import org.apache.arrow.vector.types.pojo.ArrowType

/** Bits per value of the Arrow types stored as fixed-width values (a 2.0 `flat`, 2.1+ flat slots); None for the others. */
private[file] object FixedWidth {
  def bits(t: ArrowType): Option[Int] = t match {
    case _: ArrowType.Bool => Some(1)
    case i: ArrowType.Int => Some(i.getBitWidth)
    case f: ArrowType.FloatingPoint => Some(f.getPrecision match {
      case FloatingPointPrecision.HALF => 16
      case FloatingPointPrecision.SINGLE => 32
      case FloatingPointPrecision.DOUBLE => 64
    })
    case d: ArrowType.Date => Some(if (d.getUnit == DateUnit.DAY) 32 else 64)
    case t: ArrowType.Time => Some(t.getBitWidth)
    case _: ArrowType.Timestamp | _: ArrowType.Duration => Some(64)
    case d: ArrowType.Decimal => Some(d.getBitWidth)
    case b: ArrowType.FixedSizeBinary => Some(8 * b.getByteWidth)
    case _ => None
  }
}
