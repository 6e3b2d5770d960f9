package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.{Dataset, History}

/** The history rows, computed on the driver from manifests and transactions (see [[History]]). */
final class HistoryScan(tableName: String, dataset: Dataset) extends LocalScan {
  override def rows(): Array[InternalRow] = History.of(dataset).map { e =>
    InternalRow(e.version, e.commitMicros, UTF8String.fromString(e.operation), e.rowsAdded, e.rowsDeleted, e.rows)
  }.toArray
  override def readSchema(): StructType = HistoryTable.Schema
  override def description(): String = s"history of $tableName"
}
