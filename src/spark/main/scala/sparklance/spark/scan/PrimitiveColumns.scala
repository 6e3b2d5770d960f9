package sparklance.spark.scan

import org.apache.arrow.vector._
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import sparklance.format.Resources

/**
 * Fixed-width columns handed to Spark as its own off-heap column vectors, one per column, reused
 * from batch to batch: the values are copied with one memcpy, and Spark then reads them without
 * Arrow's per-value bounds and validity checks, which cost more than the copy.
 */
final class PrimitiveColumns extends AutoCloseable {
  private val vectors = scala.collection.mutable.Map.empty[Int, OffHeapColumnVector]

  /** Spark's vector for column `ordinal` holding `v`'s values, or None if `v` is not such a column. */
  def load(ordinal: Int, v: FieldVector, dataType: DataType): Option[OffHeapColumnVector] = {
    val width = (v, dataType) match {
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
    Platform.copyMemory(null, v.getDataBuffer.memoryAddress(), null, out.valuesNativeAddress(), n.toLong * width)
    if (v.getNullCount > 0) {
      var i = 0
      while (i < n) { if (v.isNull(i)) out.putNull(i); i += 1 }
    }
    Some(out)
  }

  def close(): Unit = try Resources.closeAll(vectors.values) finally vectors.clear()
}
