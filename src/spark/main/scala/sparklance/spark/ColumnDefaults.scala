package sparklance.spark

import org.apache.spark.sql.catalyst.util.ResolveDefaultColumns
import org.apache.spark.sql.types.{Metadata, MetadataBuilder, StructField}

/**
 * Column DEFAULT values, kept in the Lance field's metadata (which pylance's appends, deletes,
 * updates, merge_insert, compaction, add/alter/drop_columns carry over; see docs/columns.md):
 *  - `spark.default.current`: the default's SQL text, as written in CREATE TABLE or ALTER ... SET
 *    DEFAULT (Spark's CURRENT_DEFAULT): what INSERT, UPDATE SET c = DEFAULT and MERGE put in;
 *  - `spark.default.exists`: the SQL literal of the value rows that predate the default hold
 *    (Spark's EXISTS_DEFAULT, fixed when the default was declared: `current_date()` is that day).
 *    ALTER TABLE ADD COLUMN ... DEFAULT writes this value into every existing row, so pylance
 *    reads it too; a column given a default later keeps the values its rows hold.
 * Spark analyses both (they must be constant and of the column's type) before the catalog sees them.
 */
object ColumnDefaults {
  val CurrentKey = "spark.default.current"
  val ExistsKey = "spark.default.exists"

  /** Spark's column metadata keys and ours, in both directions. */
  private val keys = Seq(
    ResolveDefaultColumns.CURRENT_DEFAULT_COLUMN_METADATA_KEY -> CurrentKey,
    ResolveDefaultColumns.EXISTS_DEFAULT_COLUMN_METADATA_KEY -> ExistsKey)

  /** The Lance field metadata that keeps the defaults of a Spark column's metadata. */
  def toLance(metadata: Metadata): Map[String, String] =
    keys.collect { case (spark, lance) if metadata.contains(spark) => lance -> metadata.getString(spark) }.toMap

  /** `field` with the defaults of a Lance field's `metadata` in its Spark metadata. */
  def toSpark(field: StructField, metadata: Map[String, String]): StructField = {
    val found = keys.flatMap { case (spark, lance) => metadata.get(lance).map(spark -> _) }
    if (found.isEmpty) field
    else field.copy(metadata = found.foldLeft(new MetadataBuilder().withMetadata(field.metadata)) {
      case (b, (k, v)) => b.putString(k, v)
    }.build())
  }

  /** The SQL of a column's current default, if it has one. */
  def current(field: StructField): Option[String] =
    Some(ResolveDefaultColumns.CURRENT_DEFAULT_COLUMN_METADATA_KEY).filter(field.metadata.contains).map(field.metadata.getString)

  /** The SQL literal existing rows of a column with a default get. */
  def exists(field: StructField): Option[String] =
    Some(ResolveDefaultColumns.EXISTS_DEFAULT_COLUMN_METADATA_KEY).filter(field.metadata.contains).map(field.metadata.getString)
}
