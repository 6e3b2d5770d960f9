package sparklance.spark.indexing

import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.spark.sql.Row
import org.apache.spark.sql.types._
import sparklance.format.index.scalar.ScalarKeyOrdering
import sparklance.format.skipping.ZoneValue

/**
 * The row a BTREE build sorts with Spark SQL for one indexed value: a key whose Spark order is
 * [[sparklance.format.index.scalar.ScalarKeyOrdering]] (null first; ascending nulls-first is
 * Spark's default), the value where the key does not give it back, and the row address, which
 * breaks ties. Spark's own order of doubles puts -0.0 with 0.0, so a floating point value is keyed
 * by [[ScalarKeyOrdering.doubleKey]] (-0.0 before 0.0, all NaNs one key after +Infinity) and
 * travels beside its key. Integers, dates and timestamps are longs; strings and binary are binary,
 * which Spark orders as unsigned bytes like Lance; decimals and booleans are themselves.
 */
final class BTreeSortKey private (keyType: DataType, floating: Boolean) extends Serializable {
  val schema: StructType = StructType(
    Seq(StructField("key", keyType)) ++
      (if (floating) Seq(StructField("value", DoubleType)) else Nil) :+
      StructField("address", LongType, nullable = false))

  private val addressAt = schema.size - 1

  def row(value: Option[ZoneValue], address: Long): Row = value match {
    case None => if (floating) Row(null, null, address) else Row(null, address)
    case Some(ZoneValue.Floating(d)) => Row(ScalarKeyOrdering.doubleKey(d), d, address)
    case Some(ZoneValue.Integral(l)) => Row(l, address)
    case Some(ZoneValue.Bytes(b)) => Row(b, address)
    case Some(ZoneValue.Decimal(d)) => Row(d, address)
    case Some(ZoneValue.Bool(b)) => Row(b, address)
  }

  /** The value a sorted row holds: the inverse of [[row]]. */
  def value(r: Row): Option[ZoneValue] =
    if (r.isNullAt(0)) None
    else Some(keyType match {
      case _ if floating => ZoneValue.Floating(r.getDouble(1))
      case LongType => ZoneValue.Integral(r.getLong(0))
      case BinaryType => ZoneValue.Bytes(r.getAs[Array[Byte]](0))
      case _: DecimalType => ZoneValue.Decimal(r.getDecimal(0))
      case BooleanType => ZoneValue.Bool(r.getBoolean(0))
      case other => throw new IllegalStateException(s"no BTREE sort key of type $other")
    })

  def address(r: Row): Long = r.getLong(addressAt)
}

object BTreeSortKey {
  /** The sort key of a column of `t`, one [[sparklance.format.skipping.ZoneValues.supports]] accepts. */
  def of(t: ArrowType): BTreeSortKey = t match {
    case _: ArrowType.FloatingPoint => new BTreeSortKey(LongType, floating = true)
    case _: ArrowType.Int | _: ArrowType.Date | _: ArrowType.Timestamp => new BTreeSortKey(LongType, floating = false)
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary =>
      new BTreeSortKey(BinaryType, floating = false)
    case d: ArrowType.Decimal => new BTreeSortKey(DecimalType(d.getPrecision, d.getScale), floating = false)
    case _: ArrowType.Bool => new BTreeSortKey(BooleanType, floating = false)
    case other => throw new IllegalArgumentException(s"a BTREE cannot index values of type $other")
  }

}
