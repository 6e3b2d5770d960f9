package sparklance.spark

import java.util
import org.apache.spark.sql.connector.catalog.{Column, SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType, TimestampType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.table.Dataset

/**
 * `SELECT * FROM lance.db.t.history`: one row per version of `db.t`, oldest first, with the
 * commit time, the operation and the rows it added and deleted (see [[History]]).
 */
final class HistoryTable(tableName: String, dataset: Dataset) extends Table with SupportsRead {
  override def name(): String = s"$tableName.${HistoryTable.Name}"
  override def columns(): Array[Column] = Columns.fromStruct(HistoryTable.Schema)
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = new HistoryScanBuilder(tableName, dataset)
}

object HistoryTable {
  val Name = "history"
  val Schema: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("timestamp", TimestampType, nullable = false),
    StructField("operation", StringType, nullable = false),
    StructField("rows_added", LongType, nullable = false),
    StructField("rows_deleted", LongType, nullable = false),
    StructField("rows", LongType, nullable = false)))
}
