package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.index.Indices
import sparklance.format.table.{Dataset, FeatureFlags}

/**
 * `SELECT * FROM lance.db.t.detail`: one row describing the newest version of `db.t`, what Delta's
 * DESCRIBE DETAIL gives: format, location, version, the file format version and feature flags,
 * fragment, file and row counts, bytes, index names, the table properties (as DESCRIBE TABLE
 * EXTENDED lists them), when it was created (NULL once cleanup removed version 1, the only place
 * Lance records it) and last modified. Per fragment: `<table>.fragments` ([[FragmentsTable]]).
 */
final class DetailTable(tableName: String, dataset: Dataset) extends MetadataTable(tableName, DetailTable.Name, DetailTable.Schema) {
  override def rows(): Array[InternalRow] = {
    val listing = dataset.listing()
    val snapshot = listing.snapshot(listing.versions.last)
    val fragments = FragmentsTable.describe(dataset.storage, snapshot)
    val manifest = snapshot.manifest
    def text(s: String) = UTF8String.fromString(s)
    def texts(values: Seq[String]) = new GenericArrayData(values.map(text).toArray[Any])
    val properties = TableProperties.describe(snapshot).toSeq.sortBy(_._1)
    val createdAt = if (listing.versions.head == 1L) java.lang.Long.valueOf(listing.snapshot(1L).commitMicros) else null
    val indices = Indices.parse(snapshot.file.indexSection, s"$tableName version ${snapshot.version}").map(_.getName).distinct.sorted
    Array(InternalRow(text("lance"), text(tableName), text(snapshot.tablePath), snapshot.version,
      text(snapshot.dataStorageVersion), texts(FeatureFlags.describe(manifest.getReaderFeatureFlags)),
      texts(FeatureFlags.describe(manifest.getWriterFeatureFlags)), fragments.size,
      fragments.map(_.files.size).sum, fragments.count(_.deletionFile.isDefined), fragments.map(_.bytes).sum,
      fragments.map(_.rows).sum, fragments.map(_.deletedRows).sum, texts(indices),
      ArrayBasedMapData(properties.map(p => text(p._1)).toArray, properties.map(p => text(p._2)).toArray),
      createdAt, snapshot.commitMicros))
  }
}

object DetailTable {
  val Name = "detail"
  val Schema: StructType = StructType(Seq(
    StructField("format", StringType, nullable = false),
    StructField("name", StringType, nullable = false),
    StructField("location", StringType, nullable = false),
    StructField("version", LongType, nullable = false),
    StructField("data_storage_version", StringType, nullable = false),
    StructField("reader_feature_flags", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("writer_feature_flags", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("num_fragments", IntegerType, nullable = false),
    StructField("num_data_files", IntegerType, nullable = false),
    StructField("num_deletion_files", IntegerType, nullable = false),
    StructField("size_in_bytes", LongType, nullable = false),
    StructField("num_rows", LongType, nullable = false),
    StructField("num_deleted_rows", LongType, nullable = false),
    StructField("indices", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("properties", MapType(StringType, StringType, valueContainsNull = false), nullable = false),
    StructField("created_at", TimestampType),
    StructField("last_modified", TimestampType, nullable = false)))
}
