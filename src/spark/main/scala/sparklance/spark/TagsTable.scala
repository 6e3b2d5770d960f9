package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.{Dataset, Tags}

/**
 * `SELECT * FROM lance.db.t.tags`: the tags of `db.t`, by name: the version each names (and its
 * branch, for tags pylance set on one), when it was created and last moved, and the size of the
 * tagged manifest.
 */
final class TagsTable(tableName: String, dataset: Dataset) extends MetadataTable(tableName, TagsTable.Name, TagsTable.Schema) {
  override def rows(): Array[InternalRow] = new Tags(dataset).list.map { t =>
    def micros(i: java.time.Instant) = org.apache.spark.sql.catalyst.util.DateTimeUtils.instantToMicros(i)
    InternalRow(UTF8String.fromString(t.name), t.version, t.branch.map(UTF8String.fromString).orNull,
      micros(t.createdAt), micros(t.updatedAt), t.manifestSize)
  }.toArray
}

object TagsTable {
  val Name = "tags"
  val Schema: StructType = StructType(Seq(
    StructField("tag", StringType, nullable = false),
    StructField("version", LongType, nullable = false),
    StructField("branch", StringType),
    StructField("created_at", TimestampType, nullable = false),
    StructField("updated_at", TimestampType, nullable = false),
    StructField("manifest_size", LongType, nullable = false)))
}
