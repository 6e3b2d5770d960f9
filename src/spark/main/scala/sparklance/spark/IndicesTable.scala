package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{DateTimeUtils, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import sparklance.format.index.Indices
import sparklance.format.skipping.DataSkipping
import sparklance.format.table.Dataset

/**
 * `SELECT * FROM lance.db.t.indices`: the index segments of the newest version of `db.t`, whoever
 * built them: name, type (as Lance names its details, e.g. ZoneMap, BTree, Bitmap), the columns
 * (dotted paths), the segment's uuid, the version its rows were read from, the fragments it covers
 * and the table's fragments it does not (read whole by queries, until the index is built again),
 * whether sparklance's scans skip data with it, and when it was built.
 */
final class IndicesTable(tableName: String, dataset: Dataset) extends MetadataTable(tableName, IndicesTable.Name, IndicesTable.Schema) {
  override def rows(): Array[InternalRow] = {
    val snapshot = dataset.snapshot()
    val paths = snapshot.schema.fields.flatMap { top =>
      def walk(f: sparklance.format.table.LanceField, prefix: String): Seq[(Int, String)] =
        (f.id -> s"$prefix${f.name}") +: f.children.flatMap(walk(_, s"$prefix${f.name}."))
      walk(top, "")
    }.toMap
    val fragments = snapshot.fragments.map(_.getId)
    Indices.parse(snapshot.file.indexSection, s"$tableName version ${snapshot.version}").map { index =>
      def text(s: String) = UTF8String.fromString(s)
      val covered = Indices.coverage(index).map(_.toArray.map(Integer.toUnsignedLong).toSeq).getOrElse(Nil)
      val coveredSet = covered.toSet
      val columns = index.getFieldsList.asScala.map(id => text(paths.getOrElse(id.intValue, s"<field ${id.intValue}>")))
      InternalRow(text(index.getName), text(Indices.typeName(index)), new GenericArrayData(columns.toArray[Any]),
        text(Indices.directory(index)), index.getDatasetVersion,
        new GenericArrayData(covered.sorted.toArray[Any]),
        new GenericArrayData(fragments.filterNot(coveredSet).toArray[Any]),
        DataSkipping.uses(index, snapshot.stableRowIds),
        if (index.hasCreatedAt) java.lang.Long.valueOf(DateTimeUtils.millisToMicros(index.getCreatedAt)) else null)
    }.toArray
  }
}

object IndicesTable {
  val Name = "indices"
  val Schema: StructType = StructType(Seq(
    StructField("name", StringType, nullable = false),
    StructField("type", StringType, nullable = false),
    StructField("columns", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("uuid", StringType, nullable = false),
    StructField("dataset_version", LongType, nullable = false),
    StructField("fragment_ids", ArrayType(LongType, containsNull = false), nullable = false),
    StructField("unindexed_fragment_ids", ArrayType(LongType, containsNull = false), nullable = false),
    StructField("skips_data", BooleanType, nullable = false),
    StructField("created_at", TimestampType)))
}
