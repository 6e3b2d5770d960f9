package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{BaseRepeatedValueVector, FixedSizeListVector, LargeListVector, ListVector, MapVector, StructVector}
import org.apache.arrow.vector.types.TimeUnit
import org.apache.arrow.vector.types.pojo.{ArrowType, FieldType}
import org.apache.spark.sql.types._
import java.nio.charset.StandardCharsets.UTF_8
import sparklance.spark.InvalidValueException
import sparklance.format.json.Jsonb

/**
 * Spark's ArrowColumnVector understands a fixed set of Arrow vector classes. Lance columns of
 * other types (unsigned integers, half floats, date64, non-microsecond timestamps, fixed-size
 * binary) are converted to the class that holds the widened Spark type, and so are columns read in
 * a wider type than they were stored in (see [[sparklance.spark.changes.ChangeSchemas]]); others pass through.
 */
object SparkVectors {
  def adapt(v: FieldVector, target: DataType, allocator: BufferAllocator): FieldVector = (v, target) match {
    case (u: UInt1Vector, ShortType) => convert(u, new SmallIntVector(u.getName, allocator))((d, i) => d.set(i, u.get(i) & 0xFF))
    case (u: UInt2Vector, IntegerType) => convert(u, new IntVector(u.getName, allocator))((d, i) => d.set(i, u.get(i).toInt))
    case (u: UInt4Vector, LongType) => convert(u, new BigIntVector(u.getName, allocator))((d, i) => d.set(i, Integer.toUnsignedLong(u.get(i))))
    case (u: UInt8Vector, _: DecimalType) =>
      convert(u, new DecimalVector(u.getName, allocator, 20, 0))((d, i) =>
        d.set(i, new java.math.BigDecimal(new java.math.BigInteger(java.lang.Long.toUnsignedString(u.get(i))))))
    // Values of a column stored before ALTER COLUMN ... TYPE widened it (change data serves old
    // rows in the type of the range's end): signed integers to a wider type, FLOAT to DOUBLE.
    case (i @ (_: TinyIntVector | _: SmallIntVector | _: IntVector), LongType) =>
      convert(i, new BigIntVector(i.getName, allocator))((d, r) => d.set(r, i.asInstanceOf[BaseIntVector].getValueAsLong(r)))
    case (i @ (_: TinyIntVector | _: SmallIntVector), IntegerType) =>
      convert(i, new IntVector(i.getName, allocator))((d, r) => d.set(r, i.asInstanceOf[BaseIntVector].getValueAsLong(r).toInt))
    case (i: TinyIntVector, ShortType) => convert(i, new SmallIntVector(i.getName, allocator))((d, r) => d.set(r, i.get(r).toShort))
    case (f: Float4Vector, DoubleType) => convert(f, new Float8Vector(f.getName, allocator))((d, r) => d.set(r, f.get(r).toDouble))
    case (h: Float2Vector, FloatType) => convert(h, new Float4Vector(h.getName, allocator))((d, i) => d.set(i, h.getValueAsFloat(i)))
    case (m: DateMilliVector, DateType) =>
      convert(m, new DateDayVector(m.getName, allocator))((d, i) => d.set(i, Math.floorDiv(m.get(i), 86400000L).toInt))
    case (t: TimeStampVector, TimestampType | TimestampNTZType) if !isMicros(t) =>
      val unit = t.getField.getType.asInstanceOf[ArrowType.Timestamp].getUnit
      val dest: TimeStampVector =
        if (target == TimestampType) new TimeStampMicroTZVector(t.getName, allocator, "UTC")
        else new TimeStampMicroVector(t.getName, allocator)
      convert(t, dest)((d, i) => d.set(i, toMicros(t.get(i), unit, t.getName)))
    case (t: TimeStampMicroVector, TimestampType) =>
      convert(t, new TimeStampMicroTZVector(t.getName, allocator, "UTC"))((d, i) => d.set(i, t.get(i)))
    case (t: TimeStampMicroTZVector, TimestampNTZType) =>
      convert(t, new TimeStampMicroVector(t.getName, allocator))((d, i) => d.set(i, t.get(i)))
    // JSONB as its text (see Jsonb).
    case (j: LargeVarBinaryVector, StringType) =>
      convert(j, new VarCharVector(j.getName, allocator))((d, i) => d.setSafe(i, Jsonb.decode(j.get(i)).getBytes(UTF_8)))
    // Spark reads durations as microseconds and TIME as nanoseconds; decimals from 128-bit vectors.
    case (d: DurationVector, _: DayTimeIntervalType) if d.getUnit != TimeUnit.MICROSECOND =>
      val dest = new DurationVector(d.getName, FieldType.nullable(new ArrowType.Duration(TimeUnit.MICROSECOND)), allocator)
      convert(d, dest)((out, i) => out.set(i, toMicros(DurationVector.get(d.getDataBuffer, i), d.getUnit, d.getName)))
    case (t: TimeSecVector, _: TimeType) => convert(t, new TimeNanoVector(t.getName, allocator))((d, i) => d.set(i, t.get(i) * 1000000000L))
    case (t: TimeMilliVector, _: TimeType) => convert(t, new TimeNanoVector(t.getName, allocator))((d, i) => d.set(i, t.get(i) * 1000000L))
    case (t: TimeMicroVector, _: TimeType) => convert(t, new TimeNanoVector(t.getName, allocator))((d, i) => d.set(i, t.get(i) * 1000L))
    case (w: Decimal256Vector, t: DecimalType) =>
      convert(w, new DecimalVector(w.getName, allocator, t.precision, t.scale))((d, i) => d.set(i, w.getObject(i)))
    case (b: FixedSizeBinaryVector, BinaryType) =>
      convert(b, new VarBinaryVector(b.getName, allocator))((d, i) => d.setSafe(i, b.get(i)))
    case (f: FixedSizeListVector, ArrayType(element, _)) =>
      val dim = f.getListSize
      toList(f, adapt(f.getDataVector, element, allocator), allocator)(i => (i + 1) * dim)
    case (l: LargeListVector, ArrayType(element, _)) =>
      toList(l, adapt(l.getDataVector, element, allocator), allocator)(i =>
        Math.toIntExact(l.getOffsetBuffer.getLong((i + 1).toLong * 8L)))
    case (m: MapVector, MapType(keyType, valueType, valueNullable)) =>
      val entries = m.getDataVector
      val adapted = adapt(entries, StructType(Seq(StructField(MapVector.KEY_NAME, keyType, nullable = false),
        StructField(MapVector.VALUE_NAME, valueType, valueNullable))), allocator)
      if (adapted eq entries) m
      else {
        val n = m.getValueCount
        val out = new MapVector(m.getName, allocator, m.getField.getFieldType, null)
        out.addOrGetVector[FieldVector](adapted.getField.getFieldType)
        out.setInitialCapacity(n)
        out.allocateNew()
        out.getOffsetBuffer.setBytes(0, m.getOffsetBuffer, 0, (n + 1).toLong * BaseRepeatedValueVector.OFFSET_WIDTH)
        copyValidity(m, out)
        adapted.makeTransferPair(out.getDataVector).transfer()
        out.setLastSet(n - 1)
        out.setValueCount(n)
        out
      }
    case (l: ListVector, ArrayType(element, _)) =>
      val items = adapt(l.getDataVector, element, allocator)
      if (items eq l.getDataVector) l
      else toList(l, items, allocator)(i => l.getOffsetBuffer.getInt((i + 1).toLong * BaseRepeatedValueVector.OFFSET_WIDTH))
    case (s: StructVector, StructType(fields)) =>
      val children = fields.toSeq.map(f => s.getChild(f.name).asInstanceOf[FieldVector])
      val adapted = children.zip(fields).map { case (c, f) => adapt(c, f.dataType, allocator) }
      if (adapted.zip(children).forall { case (a, c) => a eq c }) s
      else {
        val out = new StructVector(s.getName, allocator, s.getField.getFieldType, null)
        val targets = adapted.map(a => out.addOrGet(a.getName, a.getField.getFieldType, classOf[FieldVector]))
        out.setInitialCapacity(s.getValueCount)
        out.allocateNew()
        adapted.zip(targets).foreach { case (a, target) => a.makeTransferPair(target).transfer() }
        copyValidity(s, out)
        out.setValueCount(s.getValueCount)
        out
      }
    case _ => v
  }

  /**
   * A ListVector over `items` (moved, not copied) with the validity of `src` and the end offset of
   * row i given by `end(i)`: how fixed-size and large lists reach Spark, which reads only ListVector.
   */
  private def toList(src: FieldVector, items: FieldVector, allocator: BufferAllocator)(end: Int => Int): ListVector = {
    val n = src.getValueCount
    val out = new ListVector(src.getName, allocator,
      new FieldType(src.getField.isNullable, ArrowType.List.INSTANCE, null), null)
    out.addOrGetVector[FieldVector](items.getField.getFieldType)
    out.setInitialCapacity(n)
    out.allocateNew()
    val offsets = out.getOffsetBuffer
    offsets.setInt(0, 0)
    var i = 0
    while (i < n) { offsets.setInt((i + 1).toLong * BaseRepeatedValueVector.OFFSET_WIDTH, end(i)); i += 1 }
    copyValidity(src, out)
    items.makeTransferPair(out.getDataVector).transfer()
    out.setLastSet(n - 1)
    out.setValueCount(n)
    out
  }

  // Whole bytes where possible: bit by bit, a batch of vectors spent a fifth of its scan time here.
  private def copyValidity(src: FieldVector, dest: FieldVector): Unit = {
    val n = src.getValueCount
    val bytes = (n + 7L) / 8
    val from = src.getValidityBuffer
    if (src.getNullCount == 0) dest.getValidityBuffer.setOne(0, bytes)
    else if (from != null && from.capacity >= bytes) dest.getValidityBuffer.setBytes(0, from, 0, bytes)
    else {
      var i = 0
      while (i < n) {
        BitVectorHelper.setValidityBit(dest.getValidityBuffer, i, if (src.isNull(i)) 0 else 1)
        i += 1
      }
    }
  }

  private def isMicros(t: TimeStampVector): Boolean = t.isInstanceOf[TimeStampMicroVector] || t.isInstanceOf[TimeStampMicroTZVector]

  /** A value of `unit` in microseconds; one Spark's microseconds cannot hold fails, where it would wrap around. */
  private def toMicros(value: Long, unit: TimeUnit, column: String): Long = {
    def times(n: Long) = try Math.multiplyExact(value, n) catch {
      case _: ArithmeticException => throw new InvalidValueException(column,
        s"Value $value (${unit.name.toLowerCase}) of column '$column' is beyond what Spark's microsecond values hold")
    }
    unit match {
      case TimeUnit.SECOND => times(1000000L)
      case TimeUnit.MILLISECOND => times(1000L)
      case TimeUnit.MICROSECOND => value
      case TimeUnit.NANOSECOND => Math.floorDiv(value, 1000L)
    }
  }

  private def convert[S <: FieldVector, D <: FieldVector](src: S, dest: D)(copy: (D, Int) => Unit): D = {
    val n = src.getValueCount
    try {
      dest.setInitialCapacity(n)
      dest.allocateNew()
      var i = 0
      while (i < n) {
        if (src.isNull(i)) dest.setNull(i) else copy(dest, i)
        i += 1
      }
      dest.setValueCount(n)
      dest
    } catch { case e: Throwable => dest.close(); throw e }
  }
}
