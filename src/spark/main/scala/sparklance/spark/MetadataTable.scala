package sparklance.spark

import java.util
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{Column, SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A read-only table about a Lance table, named `<table>.<kind>` (`lance.db.t.history`,
 * `lance.db.t.tags`): a few rows computed on the driver from the table's metadata.
 */
abstract class MetadataTable(tableName: String, kind: String, schema: StructType) extends Table with SupportsRead {
  /** The rows, computed when a query scans the table. */
  def rows(): Array[InternalRow]

  override def name(): String = s"$tableName.$kind"
  override def columns(): Array[Column] = Columns.fromStruct(schema)
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = new MetadataScanBuilder(this, schema)
}
