package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import sparklance.spark.LanceTable

/**
 * COUNT(*) answered from fragment metadata (physical rows minus deleted rows): no data file is
 * opened, and a deletion file only when the manifest lacks its count.
 */
final class LanceCountScan(count: Long, table: LanceTable) extends LocalScan with ReadsTable {
  // It counted every row.
  override val read: TableRead = TableRead(table, Nil)
  override def rows(): Array[InternalRow] = Array(InternalRow(count))
  override def readSchema(): StructType = StructType(Seq(StructField("count(*)", LongType, nullable = false)))
  override def description(): String = s"LanceCountScan ${table.tableName} count=$count"
}
