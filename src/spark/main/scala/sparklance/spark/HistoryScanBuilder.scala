package sparklance.spark

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import sparklance.format.table.Dataset

/** Builds the scan of a table's history; it has nothing to push down. */
final class HistoryScanBuilder(tableName: String, dataset: Dataset) extends ScanBuilder {
  override def build(): Scan = new HistoryScan(tableName, dataset)
}
