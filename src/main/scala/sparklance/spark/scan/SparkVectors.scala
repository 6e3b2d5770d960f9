package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.types.TimeUnit
import org.apache.spark.sql.types._

/**
 * Spark's ArrowColumnVector understands a fixed set of Arrow vector classes. Lance columns of
 * other types (unsigned integers, half floats, date64, non-microsecond timestamps, fixed-size
 * binary) are converted to the class that holds the widened Spark type; others pass through.
 */
object SparkVectors {
  def adapt(v: FieldVector, target: DataType, allocator: BufferAllocator): FieldVector = (v, target) match {
    case (u: UInt1Vector, ShortType) => convert(u, new SmallIntVector(u.getName, allocator))((d, i) => d.set(i, u.get(i) & 0xFF))
    case (u: UInt2Vector, IntegerType) => convert(u, new IntVector(u.getName, allocator))((d, i) => d.set(i, u.get(i).toInt))
    case (u: UInt4Vector, LongType) => convert(u, new BigIntVector(u.getName, allocator))((d, i) => d.set(i, Integer.toUnsignedLong(u.get(i))))
    case (u: UInt8Vector, _: DecimalType) =>
      convert(u, new DecimalVector(u.getName, allocator, 20, 0))((d, i) =>
        d.set(i, new java.math.BigDecimal(new java.math.BigInteger(java.lang.Long.toUnsignedString(u.get(i))))))
    case (h: Float2Vector, FloatType) => convert(h, new Float4Vector(h.getName, allocator))((d, i) => d.set(i, h.getValueAsFloat(i)))
    case (m: DateMilliVector, DateType) =>
      convert(m, new DateDayVector(m.getName, allocator))((d, i) => d.set(i, Math.floorDiv(m.get(i), 86400000L).toInt))
    case (t: TimeStampVector, TimestampType | TimestampNTZType) if !isMicros(t) =>
      val unit = t.getField.getType.asInstanceOf[org.apache.arrow.vector.types.pojo.ArrowType.Timestamp].getUnit
      val dest: TimeStampVector =
        if (target == TimestampType) new TimeStampMicroTZVector(t.getName, allocator, "UTC")
        else new TimeStampMicroVector(t.getName, allocator)
      convert(t, dest)((d, i) => d.set(i, toMicros(t.get(i), unit)))
    case (t: TimeStampMicroVector, TimestampType) =>
      convert(t, new TimeStampMicroTZVector(t.getName, allocator, "UTC"))((d, i) => d.set(i, t.get(i)))
    case (t: TimeStampMicroTZVector, TimestampNTZType) =>
      convert(t, new TimeStampMicroVector(t.getName, allocator))((d, i) => d.set(i, t.get(i)))
    case (b: FixedSizeBinaryVector, BinaryType) =>
      convert(b, new VarBinaryVector(b.getName, allocator))((d, i) => d.setSafe(i, b.get(i)))
    case _ => v
  }

  private def isMicros(t: TimeStampVector): Boolean = t.isInstanceOf[TimeStampMicroVector] || t.isInstanceOf[TimeStampMicroTZVector]

  private def toMicros(value: Long, unit: TimeUnit): Long = unit match {
    case TimeUnit.SECOND => value * 1000000L
    case TimeUnit.MILLISECOND => value * 1000L
    case TimeUnit.MICROSECOND => value
    case TimeUnit.NANOSECOND => Math.floorDiv(value, 1000L)
  }

  private def convert[S <: FieldVector, D <: FieldVector](src: S, dest: D)(copy: (D, Int) => Unit): D = {
    val n = src.getValueCount
    dest.setInitialCapacity(n)
    dest.allocateNew()
    var i = 0
    while (i < n) {
      if (src.isNull(i)) dest.setNull(i) else copy(dest, i)
      i += 1
    }
    dest.setValueCount(n)
    dest
  }
}
