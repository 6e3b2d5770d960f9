package sparklance.spark.write

import java.math.{BigDecimal => JBigDecimal}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, MapVector, StructVector}
import org.apache.arrow.vector.types.TimeUnit
import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{SpecializedGetters, UnsafeArrayData, UnsafeRow}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types._
import scala.collection.mutable.ArrayBuffer
import sparklance.format.Resources
import sparklance.format.json.Jsonb
import sparklance.format.table.LanceField
import sparklance.spark.{InvalidValueException, NotNullViolationException, SparkTypes, UnsupportedColumnException, UnsupportedTypeException}

/**
 * Appends Spark rows to Arrow vectors of a table's Lance types. Spark has already cast the
 * input to the table's Spark types; here the values are narrowed or re-scaled where the Lance
 * type differs (unsigned integers, other time units) with range checks instead of wrap-around.
 */
final class ArrowRowWriter(table: String, fields: Seq[LanceField], sparkTypes: Seq[DataType], allocator: BufferAllocator)
    extends AutoCloseable {
  /**
   * Writes the value at `ordinal` of `source` (known non-null) at index `index` of the vector. A
   * class of its own rather than a Function3, which Scala does not specialize: its two Ints were
   * boxed for every value written.
   */
  private abstract class Setter { def apply(source: SpecializedGetters, ordinal: Int, index: Int): Unit }

  // A column of a type sparklance cannot map is never written (not even as NULLs): its encoding is unknown.
  fields.foreach(f => SparkTypes.unsupported(f, table).foreach(t => throw new UnsupportedColumnException(table, f.name, t, "writes")))

  // What is allocated here is released if a later vector or a setter (a type it cannot write) fails.
  val vectors: Seq[FieldVector] = {
    val created = ArrayBuffer.empty[FieldVector]
    Resources.closeOnFailure(created) {
      fields.foreach { f => created += f.toArrow.createVector(allocator).asInstanceOf[FieldVector]; created.last.allocateNew() }
      created.toIndexedSeq
    }
  }
  private val setters: Array[Setter] = Resources.closeOnFailure(vectors) {
    fields.indices.map(i => setter(fields(i), sparkTypes(i), vectors(i), fields(i).name)).toArray
  }
  private var rows = 0

  def count: Int = rows

  // Bytes of the values appended since the last reset, counted as they are set: Arrow's own
  // sizes count only up to a value count set when the batch is sealed, and the offsets of a
  // nested vector's unset slots are not written yet.
  private var appended = 0L

  /** Bytes of the rows appended so far, to cut batches by size as well as by rows. */
  def bufferedBytes: Long = appended

  // Rows appended since the writer was made (across batches), to name a bad row that has no key column.
  private var appendedRows = 0L

  // Per column, in arrays: `fields` may be a List, whose `apply` walks it for every value.
  private val vectorArray: Array[FieldVector] = vectors.toArray
  private val nullables: Array[Boolean] = fields.map(_.nullable).toArray
  private val names: Array[String] = fields.map(_.name).toArray

  def append(row: InternalRow): Unit = {
    var c = 0
    try while (c < setters.length) {
      put(row, c, rows, vectorArray(c), setters(c), nullables(c), names(c), widths(c))
      c += 1
    } catch {
      case e: InvalidValueException => throw new InvalidValueException(e.column, s"${e.getMessage} (${whichRow(row, c)})", e.getCause)
    }
    rows += 1
    appendedRows += 1
  }

  /**
   * Names the row a bad value is in, for the user to find it: by the first column other than the
   * bad one whose values read as a key (a number, text, a date), else by its place in the task's input.
   */
  private def whichRow(row: InternalRow, bad: Int): String =
    fields.indices.find(i => i != bad && ArrowRowWriter.keyLike(sparkTypes(i))) match {
      case Some(k) =>
        val value = if (row.isNullAt(k)) "NULL" else sparkTypes(k) match {
          case DateType => java.time.LocalDate.ofEpochDay(row.getInt(k).toLong).toString
          case _: StringType => s"'${row.getUTF8String(k)}'"
          case t => row.get(k, t).toString
        }
        s"in the row where ${fields(k).name} = $value"
      case None => s"in row ${appendedRows + 1} of the task's input (the row has no key-like column to name it by)"
    }

  // Per column, the bytes a fixed-width value takes (0 for the others, whose setters count their bytes).
  private val widths: Array[Int] = vectorArray.map(ArrowRowWriter.fixedWidth)

  private def put(src: SpecializedGetters, ordinal: Int, index: Int, vec: FieldVector, set: Setter,
      nullable: Boolean, path: String, width: Int): Unit =
    if (src.isNullAt(ordinal)) {
      if (!nullable) throw new NotNullViolationException(table, path)
      vec.setNull(index)
    } else {
      set(src, ordinal, index)
      appended += width
    }

  /** Marks the vectors complete; the caller writes them and then calls `reset`. */
  def seal(): Seq[FieldVector] = { vectors.foreach(_.setValueCount(rows)); vectors }

  def reset(): Unit = { vectors.foreach(_.reset()); rows = 0; appended = 0 }

  def close(): Unit = Resources.closeAll(vectors)

  private def variable(bytes: Array[Byte])(set: Array[Byte] => Unit): Unit = { set(bytes); appended += bytes.length + 4 }

  private def outOfRange(path: String, f: LanceField, v: Any) =
    new InvalidValueException(table, path, s"value $v does not fit its type ${f.logicalType}")

  private def setter(f: LanceField, st: DataType, vec: FieldVector, path: String): Setter = {
    def long(r: SpecializedGetters, c: Int): Long = st match {
      case ByteType => r.getByte(c).toLong
      case ShortType => r.getShort(c).toLong
      case IntegerType | DateType => r.getInt(c).toLong
      case LongType | TimestampType | TimestampNTZType => r.getLong(c)
      case d: DecimalType => r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal.longValueExact()
      case other => throw new UnsupportedTypeException(table, path, other)
    }
    def ranged(min: Long, max: Long)(r: SpecializedGetters, c: Int): Long = {
      val x = long(r, c); if (x < min || x > max) throw outOfRange(path, f, x); x
    }
    (vec, st) match {
      case (v: BitVector, BooleanType) => (r, c, i) => v.setSafe(i, if (r.getBoolean(c)) 1 else 0)
      // The common pairs read their value directly: `long` matches the Spark type for every value.
      case (v: TinyIntVector, ByteType) => (r, c, i) => v.setSafe(i, r.getByte(c))
      case (v: SmallIntVector, ShortType) => (r, c, i) => v.setSafe(i, r.getShort(c))
      case (v: IntVector, IntegerType) => (r, c, i) => v.setSafe(i, r.getInt(c))
      case (v: BigIntVector, LongType) => (r, c, i) => v.setSafe(i, r.getLong(c))
      case (v: TinyIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toByte)
      case (v: SmallIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toShort)
      case (v: IntVector, _) => (r, c, i) => v.setSafe(i, long(r, c).toInt)
      case (v: BigIntVector, _) => (r, c, i) => v.setSafe(i, long(r, c))
      case (v: UInt1Vector, _) => (r, c, i) => v.setSafe(i, ranged(0, 0xFF)(r, c).toInt)
      case (v: UInt2Vector, _) => (r, c, i) => v.setSafe(i, ranged(0, 0xFFFF)(r, c).toChar)
      case (v: UInt4Vector, _) => (r, c, i) => v.setSafe(i, ranged(0, 0xFFFFFFFFL)(r, c).toInt)
      case (v: UInt8Vector, d: DecimalType) => (r, c, i) => {
        val x = r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal
        if (x.signum < 0 || x.compareTo(new JBigDecimal("18446744073709551615")) > 0) throw outOfRange(path, f, x)
        v.setSafe(i, x.toBigIntegerExact.longValue())
      }
      case (v: UInt8Vector, _) => (r, c, i) => v.setSafe(i, ranged(0, Long.MaxValue)(r, c))
      // float16 (halffloat) columns read as FLOAT; values round to the nearest half-precision float.
      case (v: Float2Vector, FloatType) => (r, c, i) => v.setSafeWithPossibleTruncate(i, r.getFloat(c))
      case (v: Float2Vector, DoubleType) => (r, c, i) => v.setSafeWithPossibleTruncate(i, r.getDouble(c).toFloat)
      case (v: Float4Vector, FloatType) => (r, c, i) => v.setSafe(i, r.getFloat(c))
      case (v: Float4Vector, DoubleType) => (r, c, i) => v.setSafe(i, r.getDouble(c).toFloat)
      case (v: Float8Vector, DoubleType) => (r, c, i) => v.setSafe(i, r.getDouble(c))
      case (v: Float8Vector, FloatType) => (r, c, i) => v.setSafe(i, r.getFloat(c).toDouble)
      // Text is copied from where the row holds it straight into the data buffer: `getBytes` made a
      // copy of each value first, and `getByteBuffer` a ByteBuffer that Arrow duplicated again (its
      // `HeapByteBuffer.duplicate` was the top frame of rows->Arrow in a 2M-row append's profile).
      // `setValueLengthSafe` sets the offsets (filling those of NULLs before) and makes room.
      case (v: VarCharVector, _) => (r, c, i) => {
        val s = r.getUTF8String(c)
        val n = s.numBytes
        v.setValueLengthSafe(i, n)
        v.setIndexDefined(i)
        s.writeToMemory(null, v.getDataBuffer.memoryAddress + v.getStartOffset(i))
        appended += n + 4
      }
      case (v: LargeVarCharVector, _) => (r, c, i) => {
        val s = r.getUTF8String(c)
        val n = s.numBytes
        v.setValueLengthSafe(i, n)
        v.setIndexDefined(i)
        val start = v.getOffsetBuffer.getLong(i.toLong * BaseLargeVariableWidthVector.OFFSET_WIDTH)
        s.writeToMemory(null, v.getDataBuffer.memoryAddress + start)
        appended += n + 4
      }
      case (v: VarBinaryVector, BinaryType) => (r, c, i) => variable(r.getBinary(c))(v.setSafe(i, _))
      // A JSON column: the text as JSONB, refused by name where it is not JSON.
      case (v: LargeVarBinaryVector, StringType) if f.json => (r, c, i) => {
        val text = r.getUTF8String(c).toString
        val jsonb = try Jsonb.encode(text) catch {
          case e: Jsonb.JsonbException => throw new InvalidValueException(table, path, s"a JSON column takes JSON text only: ${e.getMessage}", e)
        }
        variable(jsonb)(v.setSafe(i, _))
      }
      case (v: LargeVarBinaryVector, BinaryType) => (r, c, i) => variable(r.getBinary(c))(v.setSafe(i, _))
      case (v: FixedSizeBinaryVector, BinaryType) => (r, c, i) => {
        val b = r.getBinary(c)
        if (b.length != v.getByteWidth) throw outOfRange(path, f, s"a ${b.length}-byte value")
        v.setSafe(i, b)
      }
      case (v: DateDayVector, DateType) => (r, c, i) => v.setSafe(i, r.getInt(c))
      case (v: DateMilliVector, DateType) => (r, c, i) => v.setSafe(i, r.getInt(c).toLong * 86400000L)
      case (v: TimeStampVector, TimestampType | TimestampNTZType) =>
        val unit = f.arrowType.asInstanceOf[ArrowType.Timestamp].getUnit
        (r, c, i) => v.setSafe(i, fromMicros(path, f, r.getLong(c), unit))
      case (v: DurationVector, _: DayTimeIntervalType) =>
        val unit = f.arrowType.asInstanceOf[ArrowType.Duration].getUnit
        (r, c, i) => v.setSafe(i, fromMicros(path, f, r.getLong(c), unit))
      // Spark's TIME values are nanoseconds since midnight.
      case (v: TimeSecVector, _: TimeType) => (r, c, i) => v.setSafe(i, Math.floorDiv(r.getLong(c), 1000000000L).toInt)
      case (v: TimeMilliVector, _: TimeType) => (r, c, i) => v.setSafe(i, Math.floorDiv(r.getLong(c), 1000000L).toInt)
      case (v: TimeMicroVector, _: TimeType) => (r, c, i) => v.setSafe(i, Math.floorDiv(r.getLong(c), 1000L))
      case (v: TimeNanoVector, _: TimeType) => (r, c, i) => v.setSafe(i, r.getLong(c))
      // The Arrow null type holds only NULLs, which `put` sets.
      case (_: NullVector, NullType) => (_, _, _) => ()
      case (v: Decimal256Vector, d: DecimalType) => (r, c, i) => {
        val bd = r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal.setScale(v.getScale)
        if (bd.precision() > v.getPrecision) throw outOfRange(path, f, bd)
        v.setSafe(i, bd)
      }
      // Values of the column's own precision and scale, unscaled as Spark holds them. Through
      // BigDecimal (Spark's getDecimal, then Arrow's setSafe), a decimal(22,1) column took 10% of a
      // 10M-row append's CPU. Up to 18 digits Spark holds a long; above, the two's complement bytes
      // of an UnsafeRow or UnsafeArrayData (its getDecimal reads them with getBinary).
      case (v: DecimalVector, d: DecimalType) if d.scale == v.getScale && d.precision <= v.getPrecision =>
        if (d.precision <= Decimal.MAX_LONG_DIGITS) (r, c, i) => v.setSafe(i, r.getDecimal(c, d.precision, d.scale).toUnscaledLong)
        else (r, c, i) => r match {
          case u: UnsafeRow => v.setBigEndianSafe(i, u.getBinary(c))
          case u: UnsafeArrayData => v.setBigEndianSafe(i, u.getBinary(c))
          case _ => v.setSafe(i, r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal)
        }
      case (v: DecimalVector, d: DecimalType) => (r, c, i) => {
        val bd = r.getDecimal(c, d.precision, d.scale).toJavaBigDecimal.setScale(v.getScale)
        if (bd.precision() > v.getPrecision) throw outOfRange(path, f, bd)
        v.setSafe(i, bd)
      }
      case (v: StructVector, s: StructType) =>
        val kids = f.children.zip(s.fields).map { case (cf, sf) =>
          val child = v.getChild(cf.name).asInstanceOf[FieldVector]
          val childPath = s"$path.${cf.name}"
          (child, setter(cf, sf.dataType, child, childPath), cf.nullable, childPath, ArrowRowWriter.fixedWidth(child))
        }.toArray  // indexed for every row: a List's apply would walk it
        (r, c, i) => {
          val struct = r.getStruct(c, kids.size)
          v.setIndexDefined(i)
          var k = 0
          while (k < kids.size) {
            val (child, set, nullable, childPath, width) = kids(k)
            put(struct, k, i, child, set, nullable, childPath, width)
            k += 1
          }
        }
      case (v: MapVector, MapType(keyType, valueType, _)) =>
        val entries = v.getDataVector.asInstanceOf[StructVector]
        val Seq(keyField, valueField) = f.children.head.children
        val keys = entries.getChild(keyField.name).asInstanceOf[FieldVector]
        val values = entries.getChild(valueField.name).asInstanceOf[FieldVector]
        val (keyPath, valuePath) = (s"$path.key", s"$path.value")
        val (keyWidth, valueWidth) = (ArrowRowWriter.fixedWidth(keys), ArrowRowWriter.fixedWidth(values))
        val setKey = setter(keyField, keyType, keys, keyPath)
        val setValue = setter(valueField, valueType, values, valuePath)
        (r, c, i) => {
          val map = r.getMap(c)
          val (ks, vs) = (map.keyArray(), map.valueArray())
          val start = v.startNewValue(i)
          var k = 0
          while (k < map.numElements()) {
            entries.setIndexDefined(start + k)
            put(ks, k, start + k, keys, setKey, keyField.nullable, keyPath, keyWidth)
            put(vs, k, start + k, values, setValue, valueField.nullable, valuePath, valueWidth)
            k += 1
          }
          v.endValue(i, map.numElements())
        }
      case (v: ListVector, ArrayType(element, _)) =>
        val item = f.children.head
        val data = v.getDataVector
        val items = new Items(item, element, data, path)
        (r, c, i) => {
          val array = r.getArray(c)
          items.put(array, v.startNewValue(i), array.numElements())
          v.endValue(i, array.numElements())
        }
      case (v: LargeListVector, ArrayType(element, _)) =>
        val item = f.children.head
        val data = v.getDataVector
        val items = new Items(item, element, data, path)
        (r, c, i) => {
          val array = r.getArray(c)
          items.put(array, Math.toIntExact(v.startNewValue(i)), array.numElements())
          v.endValue(i, array.numElements())
        }
      case (v: FixedSizeListVector, ArrayType(element, _)) =>
        val item = LanceField(-1, "item", f.arrowItemType.get, nullable = true)
        val data = v.getDataVector
        val items = new Items(item, element, data, path)
        val dim = v.getListSize
        (r, c, i) => {
          val array = r.getArray(c)
          if (array.numElements() != dim)
            throw new InvalidValueException(table, path, s"the column holds vectors of $dim items; got an array of ${array.numElements()}")
          items.put(array, v.startNewValue(i), dim)
        }
      case _ => throw new UnsupportedTypeException(table, path, f.logicalType)
    }
  }

  /**
   * Writes the items of a list column's arrays into its item vector `data`: numbers without NULLs
   * at once where the array is Spark's own (PrimitiveItems), others one by one.
   */
  private final class Items(item: LanceField, element: DataType, data: FieldVector, listPath: String) {
    private val path = s"$listPath.element"
    private val width = ArrowRowWriter.fixedWidth(data)
    private val set = setter(item, element, data, path)
    private val copyable = PrimitiveItems.copyable(element, data)

    /** Writes the first `n` items of `array` at `start` of `data`. */
    def put(array: ArrayData, start: Int, n: Int): Unit =
      if (copyable && PrimitiveItems.copy(array, data.asInstanceOf[BaseFixedWidthVector], start, width)) appended += n.toLong * width
      else {
        var k = 0
        while (k < n) { ArrowRowWriter.this.put(array, k, start + k, data, set, item.nullable, path, width); k += 1 }
      }
  }

  private def fromMicros(path: String, f: LanceField, micros: Long, unit: TimeUnit): Long = unit match {
    case TimeUnit.MICROSECOND => micros
    case TimeUnit.MILLISECOND => Math.floorDiv(micros, 1000L)
    case TimeUnit.SECOND => Math.floorDiv(micros, 1000000L)
    case TimeUnit.NANOSECOND =>
      try Math.multiplyExact(micros, 1000L) catch { case _: ArithmeticException => throw outOfRange(path, f, micros) }
  }
}

object ArrowRowWriter {
  /** The bytes a value of `vec` takes when it holds fixed-width values (a bit counted as a byte), else 0. */
  private def fixedWidth(vec: FieldVector): Int = vec match {
    case f: BaseFixedWidthVector => math.max(f.getTypeWidth, 1)
    case _ => 0
  }

  /** Whether values of a Spark type can name a row in a message: numbers, text, dates. */
  private def keyLike(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | _: StringType | _: DecimalType => true
    case _ => false
  }
}
