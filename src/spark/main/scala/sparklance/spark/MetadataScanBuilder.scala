package sparklance.spark

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.types.StructType

/** Builds the scan of a [[MetadataTable]]; there is nothing to push down into a few rows. */
final class MetadataScanBuilder(table: MetadataTable, schema: StructType) extends ScanBuilder {
  override def build(): Scan = new MetadataScan(table, schema)
}
