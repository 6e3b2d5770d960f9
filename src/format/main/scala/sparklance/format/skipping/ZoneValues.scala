package sparklance.format.skipping

import org.apache.arrow.vector._
import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.ArrowType

/** Values of the Arrow types data skipping compares, read from vectors as [[ZoneValue]]s. */
object ZoneValues {
  /**
   * Whether the values of a field are of a type zones hold. Not a JSON column's (JSONB bytes do not
   * order as the text a predicate compares) nor a dictionary column's (its pages hold indices).
   */
  def supports(f: sparklance.format.table.LanceField): Boolean =
    !f.json && f.dictionary.isEmpty && !f.opaque && supports(f.arrowType)

  /**
   * The type of the elements of a list column whose elements can be compared (a LABEL_LIST index's
   * keys); None for any other column.
   */
  def listElement(field: sparklance.format.table.LanceField): Option[ArrowType] = field.arrowType match {
    case _: ArrowType.List | _: ArrowType.LargeList => field.children.headOption.filter(supports).map(_.arrowType)
    case _ => None
  }

  /**
   * Whether values of `t` can be compared: signed integers, dates in days, timestamps in
   * microseconds, floating point, strings, binary, booleans and 128-bit decimals.
   */
  def supports(t: ArrowType): Boolean = t match {
    case i: ArrowType.Int => i.getIsSigned
    case d: ArrowType.Date => d.getUnit == DateUnit.DAY
    case ts: ArrowType.Timestamp => ts.getUnit == TimeUnit.MICROSECOND
    case f: ArrowType.FloatingPoint => f.getPrecision != FloatingPointPrecision.HALF
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary | _: ArrowType.Bool => true
    case d: ArrowType.Decimal => d.getBitWidth == 128
    case _ => false
  }

  /** Whether `v` is of the kind the values of a column of type `t` are read as (see `at`). */
  def sameKind(t: ArrowType, v: ZoneValue): Boolean = (t, v) match {
    case (_: ArrowType.Int | _: ArrowType.Date | _: ArrowType.Timestamp, _: ZoneValue.Integral) => true
    case (_: ArrowType.FloatingPoint, _: ZoneValue.Floating) => true
    case (_: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary, _: ZoneValue.Bytes) => true
    case (_: ArrowType.Bool, _: ZoneValue.Bool) => true
    case (_: ArrowType.Decimal, _: ZoneValue.Decimal) => true
    case _ => false
  }

  /** Value `i` of `v` (of a supported type), None where null. */
  def at(v: FieldVector, i: Int): Option[ZoneValue] =
    if (v.isNull(i)) None
    else Some(v match {
      case x: TinyIntVector => ZoneValue.Integral(x.get(i).toLong)
      case x: SmallIntVector => ZoneValue.Integral(x.get(i).toLong)
      case x: IntVector => ZoneValue.Integral(x.get(i).toLong)
      case x: BigIntVector => ZoneValue.Integral(x.get(i))
      case x: DateDayVector => ZoneValue.Integral(x.get(i).toLong)
      case x: TimeStampVector => ZoneValue.Integral(x.get(i))
      case x: Float4Vector => ZoneValue.Floating(x.get(i).toDouble)
      case x: Float8Vector => ZoneValue.Floating(x.get(i))
      case x: VarCharVector => ZoneValue.Bytes(x.get(i))
      case x: LargeVarCharVector => ZoneValue.Bytes(x.get(i))
      case x: VarBinaryVector => ZoneValue.Bytes(x.get(i))
      case x: LargeVarBinaryVector => ZoneValue.Bytes(x.get(i))
      case x: BitVector => ZoneValue.Bool(x.get(i) == 1)
      case x: DecimalVector => ZoneValue.Decimal(x.getObject(i))
      case other => throw new IllegalArgumentException(s"Zone values of ${other.getField} are not compared")
    })

  /** Sets value `i` of `v` (of a supported type) to `value`, null for None. */
  def set(v: FieldVector, i: Int, value: Option[ZoneValue]): Unit = (v, value) match {
    case (x: BaseFixedWidthVector, None) => x.setNull(i)
    case (x: BaseVariableWidthVector, None) => x.setNull(i)
    case (x: BaseLargeVariableWidthVector, None) => x.setNull(i)
    case (x: TinyIntVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l.toByte)
    case (x: SmallIntVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l.toShort)
    case (x: IntVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l.toInt)
    case (x: BigIntVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l)
    case (x: DateDayVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l.toInt)
    case (x: TimeStampVector, Some(ZoneValue.Integral(l))) => x.setSafe(i, l)
    case (x: Float4Vector, Some(ZoneValue.Floating(d))) => x.setSafe(i, d.toFloat)
    case (x: Float8Vector, Some(ZoneValue.Floating(d))) => x.setSafe(i, d)
    case (x: VarCharVector, Some(ZoneValue.Bytes(b))) => x.setSafe(i, b)
    case (x: LargeVarCharVector, Some(ZoneValue.Bytes(b))) => x.setSafe(i, b)
    case (x: VarBinaryVector, Some(ZoneValue.Bytes(b))) => x.setSafe(i, b)
    case (x: LargeVarBinaryVector, Some(ZoneValue.Bytes(b))) => x.setSafe(i, b)
    case (x: BitVector, Some(ZoneValue.Bool(b))) => x.setSafe(i, if (b) 1 else 0)
    case (x: DecimalVector, Some(ZoneValue.Decimal(d))) => x.setSafe(i, d)
    case (other, x) => throw new IllegalArgumentException(s"$x does not fit ${other.getField}")
  }

  /** Value `i` of an unsigned or signed integer vector, as a long (0 where null). */
  def long(v: FieldVector, i: Int): Long = v match {
    case x: UInt4Vector => Integer.toUnsignedLong(x.get(i))
    case x: UInt8Vector => x.get(i)
    case x: IntVector => x.get(i).toLong
    case x: BigIntVector => x.get(i)
    case other => throw new IllegalArgumentException(s"${other.getField} is not an integer column")
  }
}
