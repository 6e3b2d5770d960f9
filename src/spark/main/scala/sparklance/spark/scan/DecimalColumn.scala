package sparklance.spark.scan

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import org.apache.arrow.vector.DecimalVector
import org.apache.spark.sql.types.{Decimal, DecimalType}
import org.apache.spark.unsafe.Platform

/**
 * A decimal column handed to Spark over Arrow's 128-bit values, reading each as a long where it
 * fits (almost always), which Spark's own decimals then add without BigDecimal. Spark's Arrow
 * accessor builds a BigDecimal from every value's bytes: over half the time of a sum over a
 * DECIMAL(23, 2) column went there (JFR). The vector stays owned by the batch it came in.
 */
final class DecimalColumn(vector: DecimalVector, dataType: DecimalType) extends ArrowMemoryColumn(vector, dataType) {
  private val data = vector.getDataBuffer.memoryAddress()
  private val storedScale = vector.getScale

  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = {
    if (isNullAt(rowId)) return null
    // Arrow's decimals are little-endian: the low 64 bits first.
    val low = Platform.getLong(null, data + rowId * 16L)
    val high = Platform.getLong(null, data + rowId * 16L + 8)
    if (high == (low >> 63) && scale == storedScale) Decimal(low, precision, scale)
    else {
      val unscaled = BigInteger.valueOf(high).shiftLeft(64).or(BigInteger.valueOf(low).and(DecimalColumn.Low64))
      Decimal(new JBigDecimal(unscaled, storedScale), precision, scale)
    }
  }
}

object DecimalColumn {
  private val Low64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE)
}
