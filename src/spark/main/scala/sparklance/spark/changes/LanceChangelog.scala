package sparklance.spark.changes

import org.apache.spark.sql.connector.catalog.{Changelog, Column}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType, TimestampType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.{CatalogSettings, Columns, LanceTable, SparkTypes}

/**
 * The row changes of commits `first` to `last` (inclusive) of a table with stable row ids, as
 * Spark's change-data API reads them: every data column, the row's stable id, the change type,
 * and the version and time of the commit. Updates come as pre and post images when Spark asks
 * for them (computeUpdates), else as a delete and an insert sharing the row id. Nothing is
 * copied on write, so there are no carry-over rows. Rows of every version come in the schema of
 * the range's end (see [[ChangeSchemas]]).
 */
final class LanceChangelog(val tableName: String, val dataset: Dataset, val end: Snapshot, val range: ChangeRange,
    val computeUpdates: Boolean, val settings: CatalogSettings) extends Changelog {
  def first: Long = range.first
  def last: Long = range.last

  /** The end's columns; across schema changes the ones that changed are nullable ([[ChangeSchemas.servedSchema]]). */
  lazy val dataSchema: StructType = SparkTypes.toSpark(range.schemas.fold(end.schema)(_.servedSchema), tableName)

  lazy val schema: StructType = StructType(dataSchema.fields ++ Seq(
    StructField(LanceTable.RowId, LongType, nullable = false),
    StructField(LanceChangelog.ChangeType, StringType, nullable = false),
    StructField(LanceChangelog.CommitVersion, LongType, nullable = false),
    StructField(LanceChangelog.CommitTimestamp, TimestampType, nullable = false)))

  override def name(): String = s"$tableName changes of versions $first to $last"
  override def columns(): Array[Column] = Columns.fromStruct(schema)
  override def containsCarryoverRows(): Boolean = false
  override def containsIntermediateChanges(): Boolean = last > first
  override def representsUpdateAsDeleteAndInsert(): Boolean = !computeUpdates
  override def rowId(): Array[NamedReference] = Array(Expressions.column(LanceTable.RowId))
  override def rowVersion(): NamedReference = Expressions.column(LanceChangelog.CommitVersion)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = new LanceChangelogScanBuilder(this)
}

object LanceChangelog {
  val ChangeType = "_change_type"
  val CommitVersion = "_commit_version"
  val CommitTimestamp = "_commit_timestamp"
}
