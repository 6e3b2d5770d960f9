package sparklance.spark.indexing

import org.apache.spark.sql.SparkSession
import scala.jdk.CollectionConverters._
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.index.Indices
import sparklance.format.maintenance.Compaction
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.{ZoneMapAppend, ZoneMapSegment, ZoneValues}
import sparklance.format.table.{BasePaths, Dataset, LanceSchema}

/**
 * The table property `zonemap_columns` (comma-separated top-level columns): every write of
 * sparklance that adds fragments (INSERT, overwrite, CREATE / REPLACE AS SELECT, UPDATE, MERGE,
 * compaction)
 * commits, in the same version, a zone map segment per column covering exactly those fragments,
 * so the table's zone maps never leave new rows undescribed. CREATE and ALTER TABLE refuse
 * columns the schema lacks or whose type has no zone map; a column dropped later is passed over.
 */
object ZoneMapMaintenance {
  val Property = "zonemap_columns"
  val ConfigKey = "sparklance.zonemap_columns"

  def validate(value: String): String = {
    val names = value.split(',').map(_.trim).toSeq
    if (names.isEmpty || names.exists(_.isEmpty))
      throw new IllegalArgumentException(s"$Property must list column names separated by commas, got '$value'")
    names.distinct.mkString(",")
  }

  /**
   * Refuses, naming them, listed columns that are not top-level columns of `schema` or whose type
   * has no zone map; `config` is what a CREATE or ALTER TABLE stores.
   */
  def check(table: String, schema: LanceSchema, config: Map[String, String]): Unit = {
    val wrong = columns(config).flatMap { name =>
      schema.field(name) match {
        case None => Some(s"'$name' is not a top-level column")
        case Some(f) if !ZoneValues.supports(f) => Some(s"'$name' is of type ${f.arrowType}, which has no zone map")
        case _ => None
      }
    }
    if (wrong.nonEmpty) throw new IllegalArgumentException(s"$Property of $table: ${wrong.mkString("; ")} " +
      s"(columns: ${schema.fields.map(_.name).mkString(", ")}; zone maps exist for integers, dates, timestamps in " +
      "microseconds, floating point, strings, binary, booleans and decimals)")
  }

  def columns(config: Map[String, String]): Seq[String] =
    config.get(ConfigKey).toSeq.flatMap(_.split(',').map(_.trim)).filter(_.nonEmpty)

  /**
   * The name of the column's zone map: the one zone map already on it (built by create_index, by
   * pylance, or by earlier writes), else `<column>_idx` unless another index has that name.
   */
  private def indexName(column: String, fieldId: Int, existing: Seq[IndexMetadata]): String =
    existing.filter(i => ZoneMapSegment.isZoneMap(i) && i.getFieldsList.asScala.map(_.intValue) == Seq(fieldId))
      .map(_.getName).distinct.sorted match {
      case Seq(one) => one
      case several if several.contains(s"${column}_idx") => s"${column}_idx"
      case Seq(first, _*) => first
      case _ => if (existing.exists(_.getName == s"${column}_idx")) s"${column}_zonemap" else s"${column}_idx"
    }

  /**
   * The segments to commit with `fragments` (the write's new fragments, in the operation's order,
   * written under `schema`) for the table's zone-mapped columns, their zones computed now by one
   * Spark job a column; None when the table has none.
   */
  def forNewFragments(spark: SparkSession, tableName: String, path: String, storage: Storage, storageConf: Map[String, String],
      schema: LanceSchema, config: Map[String, String], indexSection: Option[Array[Byte]],
      fragments: Seq[DataFragment]): Option[NewFragmentIndices] = {
    val fields = columns(config).flatMap(schema.field).filter(f => ZoneValues.supports(f))
    if (fields.isEmpty || fragments.isEmpty) None
    else {
      val existing = Indices.parse(indexSection, tableName)
      // Until the commit assigns ids, a new fragment is named by its position among them.
      val placeholders = fragments.zipWithIndex.map { case (f, i) => f.toBuilder.setId(i).build() }
      val perColumn = fields.map { f =>
        val name = indexName(f.name, f.id, existing)
        val rowsPerZone = ZoneMapSegment.zoneSize(existing.filter(_.getName == name))
        ZoneMapAppend.Column(name, f.id, f.arrowType, rowsPerZone,
          ZoneMapJob.zones(spark, tableName, BasePaths.own(path), storageConf, placeholders, f, rowsPerZone))
      }
      Some(new ZoneMapAppend(storage, path, perColumn))
    }
  }

  /** The same for the fragments a compaction writes. */
  def forCompaction(spark: SparkSession, tableName: String, dataset: Dataset,
      storageConf: Map[String, String]): Compaction.Indexing = (snapshot, fragments) =>
    forNewFragments(spark, tableName, dataset.path, dataset.storage, storageConf, snapshot.schema, snapshot.config,
      snapshot.file.indexSection, fragments)
}
