package sparklance.spark.write

import java.math.{BigDecimal => JBigDecimal}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.types.TimeUnit
import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import sparklance.format.LanceException
import sparklance.format.table.LanceField
import sparklance.spark.UnsupportedTypeException

/**
 * Appends Spark rows to Arrow vectors of a table's Lance types. Spark has already cast the
 * input to the table's Spark types; here the values are narrowed or re-scaled where the Lance
 * type differs (unsigned integers, other time units) with range checks instead of wrap-around.
 */
final class ArrowRowWriter(table: String, fields: Seq[LanceField], sparkTypes: Seq[DataType], allocator: BufferAllocator)
    extends AutoCloseable {
  val vectors: Seq[FieldVector] = fields.map(_.toArrow.createVector(allocator).asInstanceOf[FieldVector])
  vectors.foreach(_.allocateNew())
  private val setters: Array[(InternalRow, Int, Int) => Unit] =
    fields.indices.map(i => setter(fields(i), sparkTypes(i), vectors(i))).toArray
  private var rows = 0

  def count: Int = rows

  /** Bytes held by the vectors, to cut batches by size as well as by rows. */
  def bufferedBytes: Long = vectors.map(_.getBufferSize.toLong).sum

  def append(row: InternalRow): Unit = {
    var c = 0
    while (c < setters.length) {
      if (row.isNullAt(c)) {
        if (!fields(c).nullable)
          throw new LanceException(s"NULL value in non-nullable column '${fields(c).name}' of $table")
        vectors(c).setNull(rows)
      } else setters(c)(row, c, rows)
      c += 1
    }
    rows += 1
  }

  /** Marks the vectors complete; the caller writes them and then calls `reset`. */
  def seal(): Seq[FieldVector] = { vectors.foreach(_.setValueCount(rows)); vectors }

  def reset(): Unit = { vectors.foreach(_.reset()); rows = 0 }

  def close(): Unit = vectors.foreach(_.close())

  private def outOfRange(f: LanceField, v: Any) =
    new LanceException(s"Value $v does not fit column '${f.name}' of $table (${f.logicalType})")

  private def setter(f: LanceField, st: DataType, vec: FieldVector): (InternalRow, Int, Int) => Unit = {
    def long(r: InternalRow, c: Int): Long = st match {
      case ByteType => r.getByte(c).toLong
      case ShortType => r.getShort(c).toLong
      case IntegerType | DateType => r.getInt(c).toLong
      case LongType | TimestampType | TimestampNTZType => r.getLong(c)
      case d: DecimalType => r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal.longValueExact()
      case other => throw new UnsupportedTypeException(table, f.name, other)
    }
    (vec, st) match {
      case (v: BitVector, BooleanType) => (r, c, i) => v.setSafe(i, if (r.getBoolean(c)) 1 else 0)
      case (v: TinyIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toByte)
      case (v: SmallIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toShort)
      case (v: IntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toInt)
      case (v: BigIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c))
      case (v: UInt1Vector, _) => (r, c, i) => { val x = long(r, c); if (x < 0 || x > 0xFF) throw outOfRange(f, x); v.setSafe(i, x.toInt) }
      case (v: UInt2Vector, _) => (r, c, i) => { val x = long(r, c); if (x < 0 || x > 0xFFFF) throw outOfRange(f, x); v.setSafe(i, x.toChar) }
      case (v: UInt4Vector, _) => (r, c, i) => { val x = long(r, c); if (x < 0 || x > 0xFFFFFFFFL) throw outOfRange(f, x); v.setSafe(i, x.toInt) }
      case (v: UInt8Vector, d: DecimalType) => (r, c, i) => {
        val x = r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal
        if (x.signum < 0 || x.compareTo(new JBigDecimal("18446744073709551615")) > 0) throw outOfRange(f, x)
        v.setSafe(i, x.toBigIntegerExact.longValue())
      }
      case (v: UInt8Vector, _) => (r, c, i) => { val x = long(r, c); if (x < 0) throw outOfRange(f, x); v.setSafe(i, x) }
      case (v: Float4Vector, FloatType) => (r, c, i) => v.setSafe(i, r.getFloat(c))
      case (v: Float4Vector, DoubleType) => (r, c, i) => v.setSafe(i, r.getDouble(c).toFloat)
      case (v: Float8Vector, DoubleType) => (r, c, i) => v.setSafe(i, r.getDouble(c))
      case (v: Float8Vector, FloatType) => (r, c, i) => v.setSafe(i, r.getFloat(c).toDouble)
      case (v: VarCharVector, _) => (r, c, i) => { val s = r.getUTF8String(c); v.setSafe(i, s.getBytes) }
      case (v: LargeVarCharVector, _) => (r, c, i) => v.setSafe(i, r.getUTF8String(c).getBytes)
      case (v: VarBinaryVector, BinaryType) => (r, c, i) => v.setSafe(i, r.getBinary(c))
      case (v: LargeVarBinaryVector, BinaryType) => (r, c, i) => v.setSafe(i, r.getBinary(c))
      case (v: FixedSizeBinaryVector, BinaryType) => (r, c, i) => {
        val b = r.getBinary(c)
        if (b.length != v.getByteWidth) throw outOfRange(f, s"a ${b.length}-byte value")
        v.setSafe(i, b)
      }
      case (v: DateDayVector, DateType) => (r, c, i) => v.setSafe(i, r.getInt(c))
      case (v: DateMilliVector, DateType) => (r, c, i) => v.setSafe(i, r.getInt(c).toLong * 86400000L)
      case (v: TimeStampVector, TimestampType | TimestampNTZType) =>
        val unit = f.arrowType.asInstanceOf[ArrowType.Timestamp].getUnit
        (r, c, i) => v.setSafe(i, fromMicros(f, r.getLong(c), unit))
      case (v: DecimalVector, d: DecimalType) => (r, c, i) => {
        val dec = r.getDecimal(c, d.precision, d.scale)
        val target = v.getScale
        val bd = dec.toJavaBigDecimal.setScale(target)
        if (bd.precision() > v.getPrecision) throw outOfRange(f, bd)
        v.setSafe(i, bd)
      }
      case _ => throw new UnsupportedTypeException(table, f.name, f.logicalType)
    }
  }

  private def fromMicros(f: LanceField, micros: Long, unit: TimeUnit): Long = unit match {
    case TimeUnit.MICROSECOND => micros
    case TimeUnit.MILLISECOND => Math.floorDiv(micros, 1000L)
    case TimeUnit.SECOND => Math.floorDiv(micros, 1000000L)
    case TimeUnit.NANOSECOND =>
      try Math.multiplyExact(micros, 1000L) catch { case _: ArithmeticException => throw outOfRange(f, micros) }
  }
}
