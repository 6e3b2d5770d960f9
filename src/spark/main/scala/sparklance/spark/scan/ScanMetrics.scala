package sparklance.spark.scan

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/**
 * The Spark UI metric of a sparklance scan: bytes read from data files (footers, pages; a column
 * not read costs nothing). Spark aggregates it by instantiating the class by name.
 */
final class DataBytesReadMetric extends CustomSumMetric {
  override def name(): String = ScanMetrics.DataBytesRead
  override def description(): String = "bytes read from Lance data files"
}

object ScanMetrics {
  val DataBytesRead = "dataBytesRead"

  private final case class Value(name: String, value: Long) extends CustomTaskMetric

  def supported: Array[CustomMetric] = Array(new DataBytesReadMetric)

  def task(bytesRead: Long): Array[CustomTaskMetric] = Array(Value(DataBytesRead, bytesRead))
}
