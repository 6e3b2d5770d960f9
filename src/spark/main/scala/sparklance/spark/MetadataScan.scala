package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.types.StructType

/** The rows of a [[MetadataTable]], computed on the driver. */
final class MetadataScan(table: MetadataTable, schema: StructType) extends LocalScan {
  override def rows(): Array[InternalRow] = table.rows()
  override def readSchema(): StructType = schema
  override def description(): String = table.name()
}
