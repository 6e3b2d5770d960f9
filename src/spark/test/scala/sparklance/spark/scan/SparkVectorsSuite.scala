package sparklance.spark.scan

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{DurationVector, TimeStampSecVector}
import org.apache.arrow.vector.types.TimeUnit
import org.apache.arrow.vector.types.pojo.{ArrowType, FieldType}
import org.apache.spark.sql.types.{DayTimeIntervalType, TimestampNTZType}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.LanceException

/** Lance values widened to what Spark holds: never a wrapped-around value. */
class SparkVectorsSuite extends AnyFunSuite {
  test("seconds beyond what Spark's microseconds hold are refused by column, not wrapped around") {
    val allocator = new RootAllocator()
    try {
      val d = new DurationVector("d", FieldType.nullable(new ArrowType.Duration(TimeUnit.SECOND)), allocator)
      d.allocateNew(3); d.set(0, -90L); d.setNull(1); d.set(2, Long.MaxValue / 1000L); d.setValueCount(3)
      val e = intercept[LanceException](SparkVectors.adapt(d, DayTimeIntervalType(), allocator))
      assert(e.getMessage.contains("'d'") && e.getMessage.contains(s"${Long.MaxValue / 1000L}"), e.getMessage)
      d.setValueCount(2)
      val ok = SparkVectors.adapt(d, DayTimeIntervalType(), allocator).asInstanceOf[DurationVector]
      assert(DurationVector.get(ok.getDataBuffer, 0) == -90000000L && ok.isNull(1))
      ok.close(); d.close()
      val t = new TimeStampSecVector("t", allocator)
      t.allocateNew(1); t.set(0, Long.MaxValue / 10L); t.setValueCount(1)
      assert(intercept[LanceException](SparkVectors.adapt(t, TimestampNTZType, allocator)).getMessage.contains("'t'"))
      t.close()
    } finally allocator.close()
  }
}
