package sparklance.spark.write

import org.apache.arrow.vector._
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.bitset.BitSetMethods
import sparklance.format.file.ValidityBits

/**
 * Copies the items of a Spark array of numbers into an Arrow vector at once. An UnsafeArrayData
 * (what Spark's rows hold) keeps numbers of a fixed width side by side after its null bits, in the
 * byte order Arrow keeps them, so an array without NULLs is one memory copy and a run of validity
 * bits: an embedding of 128 floats was 128 checked writes and 128 bit sets before.
 */
private[write] object PrimitiveItems {
  /** Whether items of Spark type `element` are stored in `data` as they are, byte for byte. */
  def copyable(element: DataType, data: FieldVector): Boolean = (element, data) match {
    case (ByteType, _: TinyIntVector) | (ShortType, _: SmallIntVector) | (IntegerType, _: IntVector) |
         (LongType, _: BigIntVector) | (FloatType, _: Float4Vector) | (DoubleType, _: Float8Vector) => true
    case _ => false
  }

  /**
   * Copies every item of `array` into `data` from index `start`, if `array` is an UnsafeArrayData
   * without NULLs; otherwise returns false and leaves `data` as it was (the caller writes the items
   * one by one). `width` is the items' byte width, the same in both (see `copyable`).
   */
  def copy(array: ArrayData, data: BaseFixedWidthVector, start: Int, width: Int): Boolean = array match {
    case u: UnsafeArrayData if !hasNull(u) =>
      val n = u.numElements()
      // In longs: the copy goes by address, so the room checked must be the room needed.
      while (data.getValueCapacity.toLong < start.toLong + n) data.reAlloc()
      Platform.copyMemory(u.getBaseObject, u.getBaseOffset + UnsafeArrayData.calculateHeaderPortionInBytes(n),
        null, data.getDataBuffer.memoryAddress() + start.toLong * width, n.toLong * width)
      ValidityBits.setRange(data.getValidityBuffer, start, n)
      true
    case _ => false
  }

  /** Whether any of the array's null bits (one 8-byte word per 64 items, after its item count) is set. */
  private def hasNull(u: UnsafeArrayData): Boolean =
    BitSetMethods.anySet(u.getBaseObject, u.getBaseOffset + 8, (u.numElements() + 63) / 64)
}
