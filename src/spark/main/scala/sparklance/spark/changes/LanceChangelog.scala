package sparklance.spark.changes

import org.apache.spark.sql.connector.catalog.{Changelog, ChangelogContext, ChangelogRange, Column}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType, TimestampType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.{CatalogSettings, Columns, LanceTable, SparkTypes}

/**
 * The row changes of a table with stable row ids, as Spark's change-data API reads them: every
 * data column, the row's stable id, the change type, and the version and time of the commit.
 * Updates come as pre and post images when Spark asks for them (computeUpdates), else as a delete
 * and an insert sharing the row id. Nothing is copied on write, so there are no carry-over rows.
 *
 * Spark loads a changelog the same way for a batch read and for a stream, so `end` is the version
 * the statement or the query starts from (the latest, or the range's end), and `range` the commits
 * a batch read covers (`first` to `last`, inclusive), served in the schema of `end` (see
 * [[ChangeSchemas]]). A stream reads from where its checkpoint says, not necessarily from the
 * range's start ([[LanceChangeStream]]), so a range that cannot be read (a version removed by a
 * vacuum, a schema change rows cannot cross) is not an error of the changelog but of a batch scan
 * of it: `range` holds the error, and the schema is then that of `end`.
 */
final class LanceChangelog(val tableName: String, val dataset: Dataset, val end: Snapshot,
    rangeOrError: Either[Throwable, ChangeRange], val context: ChangelogContext, val settings: CatalogSettings)
    extends Changelog {

  /** The commits of a batch read; throws why they cannot be read. */
  def range: ChangeRange = rangeOrError.fold(e => throw e, identity)
  def computeUpdates: Boolean = context.computeUpdates()
  /** The bounds the statement or the query asked for. */
  def requested: ChangelogRange = context.range()
  def netChanges: Boolean = context.deduplicationMode() == ChangelogContext.DeduplicationMode.NET_CHANGES

  /** The end's columns; across schema changes the ones that changed are nullable ([[ChangeSchemas.servedSchema]]). */
  lazy val dataSchema: StructType =
    SparkTypes.toSpark(rangeOrError.toOption.flatMap(_.schemas).fold(end.schema)(_.servedSchema), tableName)

  lazy val schema: StructType = StructType(dataSchema.fields ++ Seq(
    StructField(LanceTable.RowId, LongType, nullable = false),
    StructField(LanceChangelog.ChangeType, StringType, nullable = false),
    StructField(LanceChangelog.CommitVersion, LongType, nullable = false),
    StructField(LanceChangelog.CommitTimestamp, TimestampType, nullable = false)))

  override def name(): String = rangeOrError.fold(_ => s"$tableName changes",
    r => s"$tableName changes of versions ${r.first} to ${r.last}")
  override def columns(): Array[Column] = Columns.fromStruct(schema)
  override def containsCarryoverRows(): Boolean = false
  override def containsIntermediateChanges(): Boolean = rangeOrError.fold(_ => true, r => r.last > r.first)
  override def representsUpdateAsDeleteAndInsert(): Boolean = !computeUpdates
  override def rowId(): Array[NamedReference] = Array(Expressions.column(LanceTable.RowId))
  override def rowVersion(): NamedReference = Expressions.column(LanceChangelog.CommitVersion)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = new LanceChangelogScanBuilder(this, options)
}

object LanceChangelog {
  val ChangeType = "_change_type"
  val CommitVersion = "_commit_version"
  val CommitTimestamp = "_commit_timestamp"
}
