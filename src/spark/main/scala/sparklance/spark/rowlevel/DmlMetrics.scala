package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/**
 * A Spark UI metric of a DELETE / UPDATE / MERGE write. Spark aggregates a metric by
 * instantiating its class by name with no arguments, so each metric is a public class of its own.
 */
sealed abstract class DmlMetric(metricName: String, text: String) extends CustomSumMetric {
  override def name(): String = metricName
  override def description(): String = text
}

final class RowsDeletedMetric extends DmlMetric(DmlMetrics.RowsDeleted, "number of rows deleted")
final class RowsUpdatedMetric extends DmlMetric(DmlMetrics.RowsUpdated, "number of rows updated")
final class RowsInsertedMetric extends DmlMetric(DmlMetrics.RowsInserted, "number of rows inserted")
final class DeletionFilesMetric extends DmlMetric(DmlMetrics.DeletionFiles, "number of deletion files written")
final class DataFilesMetric extends DmlMetric(DmlMetrics.DataFiles, "number of data files written")
final class RowsUpdatedInPlaceMetric extends DmlMetric(DmlMetrics.RowsUpdatedInPlace,
  "number of rows updated in place (columns rewritten)")
final class FragmentsUpdatedInPlaceMetric extends DmlMetric(DmlMetrics.FragmentsUpdatedInPlace,
  "number of fragments whose columns were rewritten")

object DmlMetrics {
  private final case class Value(name: String, value: Long) extends CustomTaskMetric

  val RowsDeleted = "rowsDeleted"
  val RowsUpdated = "rowsUpdated"
  val RowsInserted = "rowsInserted"
  val DeletionFiles = "deletionFilesWritten"
  val DataFiles = "dataFilesWritten"
  val RowsUpdatedInPlace = "rowsUpdatedInPlace"
  val FragmentsUpdatedInPlace = "fragmentsUpdatedInPlace"

  def supported: Array[CustomMetric] = Array(new RowsDeletedMetric, new RowsUpdatedMetric, new RowsInsertedMetric,
    new DeletionFilesMetric, new DataFilesMetric, new RowsUpdatedInPlaceMetric, new FragmentsUpdatedInPlaceMetric)

  /** A task's counts; `updated` includes the rows `updatedInPlace`. */
  def task(deleted: Long, updated: Long, inserted: Long, updatedInPlace: Long = 0, fragmentsInPlace: Long = 0): Array[CustomTaskMetric] =
    Array(Value(RowsDeleted, deleted), Value(RowsUpdated, updated), Value(RowsInserted, inserted),
      Value(RowsUpdatedInPlace, updatedInPlace), Value(FragmentsUpdatedInPlace, fragmentsInPlace))

  def driver(deletionFiles: Long, dataFiles: Long): Array[CustomTaskMetric] =
    Array(Value(DeletionFiles, deletionFiles), Value(DataFiles, dataFiles))
}
