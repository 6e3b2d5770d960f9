package sparklance.spark.scan

import org.apache.arrow.vector._
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import sparklance.format.Resources

/**
 * Fixed-width and boolean columns handed to Spark as its own off-heap column vectors, one per
 * column, reused from batch to batch: the values are copied with one memcpy (booleans expanded
 * from bits to Spark's byte per value), and Spark then reads them without Arrow's per-value
 * bounds and validity checks, which cost more than the copy.
 */
final class PrimitiveColumns extends AutoCloseable {
  private val vectors = scala.collection.mutable.Map.empty[Int, OffHeapColumnVector]

  /** Spark's vector for column `ordinal` holding `v`'s values, or None if `v` is not such a column. */
  def load(ordinal: Int, v: FieldVector, dataType: DataType): Option[OffHeapColumnVector] = {
    val width = (v, dataType) match {
      case (_: BitVector, BooleanType) => 0
      case (_: TinyIntVector, ByteType) => 1
      case (_: SmallIntVector, ShortType) => 2
      case (_: IntVector, IntegerType) | (_: DateDayVector, DateType) | (_: Float4Vector, FloatType) => 4
      case (_: BigIntVector, LongType) | (_: Float8Vector, DoubleType) => 8
      case (_: TimeStampMicroTZVector, TimestampType) | (_: TimeStampMicroVector, TimestampNTZType) => 8
      case _ => return None
    }
    val n = v.getValueCount
    val out = vectors.getOrElseUpdate(ordinal, new OffHeapColumnVector(math.max(n, 1), dataType))
    out.reset()
    out.reserve(n)
    if (width == 0) PrimitiveColumns.expandBits(v.getDataBuffer.memoryAddress(), out.valuesNativeAddress(), n)
    else Platform.copyMemory(null, v.getDataBuffer.memoryAddress(), null, out.valuesNativeAddress(), n.toLong * width)
    if (v.getNullCount > 0) {
      var i = 0
      while (i < n) { if (v.isNull(i)) out.putNull(i); i += 1 }
    }
    Some(out)
  }

  def close(): Unit = try Resources.closeAll(vectors.values) finally vectors.clear()
}

object PrimitiveColumns {
  /** Byte b's 8 bits, least significant first, as the long whose 8 bytes in memory are each 0 or 1. */
  private val Spread: Array[Long] = Array.tabulate(256) { b =>
    val little = (0 until 8).foldLeft(0L)((acc, bit) => acc | (((b >>> bit) & 1).toLong << (8 * bit)))
    if (java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN) little else java.lang.Long.reverseBytes(little)
  }

  /**
   * Arrow's bit-packed booleans (LSB first) at `from` as Spark's one byte per value at `to`:
   * eight values per store.
   */
  def expandBits(from: Long, to: Long, n: Int): Unit = {
    val whole = n / 8
    var k = 0
    while (k < whole) {
      Platform.putLong(null, to + 8L * k, Spread(Platform.getByte(null, from + k) & 0xFF))
      k += 1
    }
    var i = whole * 8
    while (i < n) {
      Platform.putByte(null, to + i, ((Platform.getByte(null, from + (i >>> 3)) >>> (i & 7)) & 1).toByte)
      i += 1
    }
  }
}
