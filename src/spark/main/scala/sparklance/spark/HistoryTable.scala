package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.{Dataset, History}

/**
 * `SELECT * FROM lance.db.t.history`: one row per version of `db.t` left (cleanup removes old
 * ones), oldest first, with the commit time, the operation as Lance names it, the version it
 * read, the rows it added and deleted, what it did in its own terms and which statement made it
 * (`operation_parameters.statement`), the tags on it, and the rows the statement inserted,
 * updated and deleted (`operation_metrics`, for DML sparklance committed).
 */
final class HistoryTable(tableName: String, dataset: Dataset)
  extends MetadataTable(tableName, HistoryTable.Name, HistoryTable.Schema) {

  override def rows(): Array[InternalRow] = History.of(dataset).map { e =>
    def text(s: String) = UTF8String.fromString(s)
    val params = e.parameters.toSeq.sortBy(_._1)
    InternalRow(e.version, e.commitMicros, text(e.operation), e.readVersion.map(Long.box).orNull,
      e.rowsAdded.map(Long.box).orNull, e.rowsDeleted.map(Long.box).orNull, e.rows,
      ArrayBasedMapData(params.map(p => text(p._1)).toArray, params.map(p => text(p._2)).toArray),
      new GenericArrayData(e.tags.map(text).toArray),
      ArrayBasedMapData(e.metrics.keys.toSeq.sorted.map(text).toArray, e.metrics.toSeq.sortBy(_._1).map(m => Long.box(m._2)).toArray))
  }.toArray
}

object HistoryTable {
  val Name = "history"
  val Schema: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("timestamp", TimestampType, nullable = false),
    StructField("operation", StringType, nullable = false),
    StructField("read_version", LongType),
    StructField("rows_added", LongType),
    StructField("rows_deleted", LongType),
    StructField("rows", LongType, nullable = false),
    StructField("operation_parameters", MapType(StringType, StringType, valueContainsNull = false), nullable = false),
    StructField("tags", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("operation_metrics", MapType(StringType, LongType, valueContainsNull = false), nullable = false)))
}
