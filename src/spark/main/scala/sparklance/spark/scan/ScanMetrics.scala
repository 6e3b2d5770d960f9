package sparklance.spark.scan

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/**
 * The Spark UI metrics of a sparklance scan. Spark aggregates each by instantiating its class by
 * name. Bytes read from data files count footers and pages; a column not read costs nothing.
 */
final class DataBytesReadMetric extends CustomSumMetric {
  override def name(): String = ScanMetrics.DataBytesRead
  override def description(): String = "bytes read from Lance data files"
}

/** Fragment splits read: a task reads several when the splits are small (see `SplitPacking`). */
final class SplitsReadMetric extends CustomSumMetric {
  override def name(): String = ScanMetrics.SplitsRead
  override def description(): String = "fragment splits read"
}

object ScanMetrics {
  val DataBytesRead = "dataBytesRead"
  val SplitsRead = "splitsRead"

  private final case class Value(name: String, value: Long) extends CustomTaskMetric

  def supported: Array[CustomMetric] = Array(new DataBytesReadMetric, new SplitsReadMetric)

  def task(bytesRead: Long, splitsRead: Long): Array[CustomTaskMetric] =
    Array(Value(DataBytesRead, bytesRead), Value(SplitsRead, splitsRead))
}
