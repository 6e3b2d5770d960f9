package sparklance.spark.scan

import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, MapVector}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * Spark's view of decoded Arrow vectors, read straight from their memory: no copy, and none of the
 * per-value checks of Spark's ArrowColumnVector, whose accessors test bounds, the buffer's
 * reference count and the validity bit through ArrowBuf on every call (a fifth of the time of a
 * full scan went to its isNullAt alone, JFR). Fixed-width columns were copied into Spark's
 * off-heap vectors for the same reason; reading them in place spares that copy too.
 *
 * A column is valid while its vector is: the batch it came in owns the vector and closes it.
 */
object ArrowColumns {
  /**
   * `v` as a Spark column of `dataType` read in place, when `v` holds exactly Spark's values of
   * that type (no widening or conversion, see [[SparkVectors]]); None otherwise.
   */
  def of(v: FieldVector, dataType: DataType): Option[ColumnVector] = (v, dataType) match {
    case (_: BitVector, BooleanType) => Some(new BitColumn(v, dataType))
    case (_: TinyIntVector, ByteType) | (_: SmallIntVector, ShortType) | (_: IntVector, IntegerType) |
        (_: DateDayVector, DateType) | (_: Float4Vector, FloatType) | (_: BigIntVector, LongType) |
        (_: Float8Vector, DoubleType) | (_: TimeStampMicroTZVector, TimestampType) |
        (_: TimeStampMicroVector, TimestampNTZType) => Some(new FixedColumn(v, dataType))
    case (d: DecimalVector, t: DecimalType) => Some(new DecimalColumn(d, t))
    case (_: VarCharVector, _: StringType) | (_: VarBinaryVector, BinaryType) => Some(new BytesColumn(v, dataType, 4))
    case (_: LargeVarCharVector, _: StringType) | (_: LargeVarBinaryVector, BinaryType) => Some(new BytesColumn(v, dataType, 8))
    case (f: FixedSizeListVector, ArrayType(element, _)) =>
      of(f.getDataVector, element).map(items => new FixedListColumn(v, dataType, items, f.getListSize))
    case (_: MapVector, _) => None
    case (l: ListVector, ArrayType(element, _)) => of(l.getDataVector, element).map(items => new ListColumn(v, dataType, items, 4))
    case (l: LargeListVector, ArrayType(element, _)) => of(l.getDataVector, element).map(items => new ListColumn(v, dataType, items, 8))
    case _ => None
  }
}

/** A column over an Arrow vector's memory: its validity bitmap, read only where it has nulls. */
abstract class ArrowMemoryColumn(vector: FieldVector, dataType: DataType) extends ColumnVector(dataType) {
  private val nulls = vector.getNullCount
  private val validity = if (nulls > 0) vector.getValidityBuffer.memoryAddress() else 0L

  override final def hasNull: Boolean = nulls > 0
  override final def numNulls: Int = nulls
  override final def isNullAt(rowId: Int): Boolean =
    nulls > 0 && ((Platform.getByte(null, validity + (rowId >>> 3)) >>> (rowId & 7)) & 1) == 0
  override def close(): Unit = ()

  private def unsupported(what: String) = new UnsupportedOperationException(s"$what of a column of $dataType")
  override def getBoolean(rowId: Int): Boolean = throw unsupported("getBoolean")
  override def getByte(rowId: Int): Byte = throw unsupported("getByte")
  override def getShort(rowId: Int): Short = throw unsupported("getShort")
  override def getInt(rowId: Int): Int = throw unsupported("getInt")
  override def getLong(rowId: Int): Long = throw unsupported("getLong")
  override def getFloat(rowId: Int): Float = throw unsupported("getFloat")
  override def getDouble(rowId: Int): Double = throw unsupported("getDouble")
  override def getArray(rowId: Int): ColumnarArray = throw unsupported("getArray")
  override def getMap(ordinal: Int): ColumnarMap = throw unsupported("getMap")
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = throw unsupported("getDecimal")
  override def getUTF8String(rowId: Int): UTF8String = throw unsupported("getUTF8String")
  override def getBinary(rowId: Int): Array[Byte] = throw unsupported("getBinary")
  override def getChild(ordinal: Int): ColumnVector = throw unsupported("getChild")
}

/** Booleans, one bit each (least significant first), as Arrow stores them. */
final class BitColumn(vector: FieldVector, dataType: DataType) extends ArrowMemoryColumn(vector, dataType) {
  private val data = vector.getDataBuffer.memoryAddress()
  override def getBoolean(rowId: Int): Boolean = ((Platform.getByte(null, data + (rowId >>> 3)) >>> (rowId & 7)) & 1) != 0
}

/** Little-endian fixed-width values: Spark's byte, short, int (and date), long (and timestamps), float and double. */
final class FixedColumn(vector: FieldVector, dataType: DataType) extends ArrowMemoryColumn(vector, dataType) {
  private val data = vector.getDataBuffer.memoryAddress()
  override def getByte(rowId: Int): Byte = Platform.getByte(null, data + rowId)
  override def getShort(rowId: Int): Short = Platform.getShort(null, data + 2L * rowId)
  override def getInt(rowId: Int): Int = Platform.getInt(null, data + 4L * rowId)
  override def getLong(rowId: Int): Long = Platform.getLong(null, data + 8L * rowId)
  override def getFloat(rowId: Int): Float = Platform.getFloat(null, data + 4L * rowId)
  override def getDouble(rowId: Int): Double = Platform.getDouble(null, data + 8L * rowId)
}

/** Strings or binaries: an offset buffer of `offsetWidth` bytes per entry over the data buffer. */
final class BytesColumn(vector: FieldVector, dataType: DataType, offsetWidth: Int) extends ArrowMemoryColumn(vector, dataType) {
  private val data = vector.getDataBuffer.memoryAddress()
  private val offsets = vector.getOffsetBuffer.memoryAddress()
  private def start(rowId: Int): Long =
    if (offsetWidth == 4) Platform.getInt(null, offsets + 4L * rowId) else Platform.getLong(null, offsets + 8L * rowId)

  override def getUTF8String(rowId: Int): UTF8String = {
    if (isNullAt(rowId)) return null
    val from = start(rowId)
    UTF8String.fromAddress(null, data + from, (start(rowId + 1) - from).toInt)
  }

  override def getBinary(rowId: Int): Array[Byte] = {
    if (isNullAt(rowId)) return null
    val from = start(rowId)
    val out = new Array[Byte]((start(rowId + 1) - from).toInt)
    Platform.copyMemory(null, data + from, out, Platform.BYTE_ARRAY_OFFSET, out.length)
    out
  }
}

/** Lists over a column of their items: list i spans items `[start(i), start(i + 1))`, from offsets of `offsetWidth` (4 or 8) bytes. */
final class ListColumn(vector: FieldVector, dataType: DataType, items: ColumnVector, offsetWidth: Int)
    extends ArrowMemoryColumn(vector, dataType) {
  private val offsets = vector.getOffsetBuffer.memoryAddress()
  private def start(rowId: Int): Int =
    if (offsetWidth == 4) Platform.getInt(null, offsets + 4L * rowId) else Math.toIntExact(Platform.getLong(null, offsets + 8L * rowId))

  override def getArray(rowId: Int): ColumnarArray = {
    if (isNullAt(rowId)) return null
    val from = start(rowId)
    new ColumnarArray(items, from, start(rowId + 1) - from)
  }

  override def close(): Unit = items.close()
}

/** Fixed-size lists (vectors) over a column of their items: list i is items `[i · dimension, (i + 1) · dimension)`. */
final class FixedListColumn(vector: FieldVector, dataType: DataType, items: ColumnVector, dimension: Int)
    extends ArrowMemoryColumn(vector, dataType) {
  override def getArray(rowId: Int): ColumnarArray =
    if (isNullAt(rowId)) null else new ColumnarArray(items, rowId * dimension, dimension)

  override def close(): Unit = items.close()
}
