package sparklance.spark.scan

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import org.apache.arrow.vector.DecimalVector
import org.apache.spark.sql.types.{Decimal, DecimalType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A decimal column handed to Spark over Arrow's 128-bit values, reading each as a long where it
 * fits (almost always), which Spark's own decimals then add without BigDecimal. Spark's Arrow
 * accessor builds a BigDecimal from every value's bytes: over half the time of a sum over a
 * DECIMAL(23, 2) column went there (JFR). The vector stays owned by the batch it came in.
 */
final class DecimalColumn(vector: DecimalVector, dataType: DecimalType) extends ColumnVector(dataType) {
  private val data = vector.getDataBuffer
  private val storedScale = vector.getScale

  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = {
    if (vector.isNull(rowId)) return null
    val low = data.getLong(rowId * 16L)
    val high = data.getLong(rowId * 16L + 8)
    if (high == (low >> 63) && scale == storedScale) Decimal(low, precision, scale)
    else {
      val unscaled = BigInteger.valueOf(high).shiftLeft(64).or(BigInteger.valueOf(low).and(DecimalColumn.Low64))
      Decimal(new JBigDecimal(unscaled, storedScale), precision, scale)
    }
  }

  override def hasNull: Boolean = vector.getNullCount > 0
  override def numNulls: Int = vector.getNullCount
  override def isNullAt(rowId: Int): Boolean = vector.isNull(rowId)
  override def close(): Unit = ()

  private def unsupported(what: String) = new UnsupportedOperationException(s"$what of a decimal column")
  override def getBoolean(rowId: Int): Boolean = throw unsupported("getBoolean")
  override def getByte(rowId: Int): Byte = throw unsupported("getByte")
  override def getShort(rowId: Int): Short = throw unsupported("getShort")
  override def getInt(rowId: Int): Int = throw unsupported("getInt")
  override def getLong(rowId: Int): Long = throw unsupported("getLong")
  override def getFloat(rowId: Int): Float = throw unsupported("getFloat")
  override def getDouble(rowId: Int): Double = throw unsupported("getDouble")
  override def getArray(rowId: Int): ColumnarArray = throw unsupported("getArray")
  override def getMap(ordinal: Int): ColumnarMap = throw unsupported("getMap")
  override def getUTF8String(rowId: Int): UTF8String = throw unsupported("getUTF8String")
  override def getBinary(rowId: Int): Array[Byte] = throw unsupported("getBinary")
  override def getChild(ordinal: Int): ColumnVector = throw unsupported("getChild")
}

object DecimalColumn {
  private val Low64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE)
}
