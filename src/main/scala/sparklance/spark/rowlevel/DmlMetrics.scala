package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** Spark UI metrics of a DELETE / UPDATE / MERGE write. */
object DmlMetrics {
  private final class Sum(metricName: String, text: String) extends CustomSumMetric {
    override def name(): String = metricName
    override def description(): String = text
  }
  private final case class Value(name: String, value: Long) extends CustomTaskMetric

  val RowsDeleted = "rowsDeleted"
  val RowsUpdated = "rowsUpdated"
  val RowsInserted = "rowsInserted"
  val DeletionFiles = "deletionFilesWritten"
  val DataFiles = "dataFilesWritten"

  val supported: Array[CustomMetric] = Array(
    new Sum(RowsDeleted, "number of rows deleted"),
    new Sum(RowsUpdated, "number of rows updated"),
    new Sum(RowsInserted, "number of rows inserted"),
    new Sum(DeletionFiles, "number of deletion files written"),
    new Sum(DataFiles, "number of data files written"))

  def task(deleted: Long, updated: Long, inserted: Long): Array[CustomTaskMetric] =
    Array(Value(RowsDeleted, deleted), Value(RowsUpdated, updated), Value(RowsInserted, inserted))

  def driver(deletionFiles: Long, dataFiles: Long): Array[CustomTaskMetric] =
    Array(Value(DeletionFiles, deletionFiles), Value(DataFiles, dataFiles))
}
