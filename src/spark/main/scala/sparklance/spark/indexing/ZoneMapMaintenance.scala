package sparklance.spark.indexing

import scala.jdk.CollectionConverters._
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.{WrittenZones, ZoneColumn, ZoneMapAppend, ZoneMapSegment, ZoneValues}
import sparklance.format.maintenance.Compaction
import sparklance.format.table.{Dataset, LanceField, LanceSchema, Snapshot}
import sparklance.spark.maintenance.ZoneMapFolding

/**
 * Zone maps kept by every write of sparklance that adds fragments (INSERT, overwrite, CREATE /
 * REPLACE AS SELECT, UPDATE, MERGE, compaction): the write tasks gather the zones of the chosen
 * columns while the rows pass (see [[sparklance.format.table.FragmentWriter]]), return them with
 * their fragments, and the commit adds, in the same version, a zone map segment per column
 * covering exactly the new fragments, so the table's zone maps never leave new rows undescribed
 * and no data is read twice.
 *
 * The columns: the table property `zonemap_columns` if set (comma-separated top-level columns,
 * `'*'` every column of a type with zone maps, `''` none); while it is unset, the first
 * [[DefaultColumns]] top-level columns of types with zone maps, as Delta collects statistics for
 * its first 32 columns. Long strings and binaries keep short bounds ([[ZoneBounds]]).
 * CREATE and ALTER TABLE refuse listed columns the schema lacks or whose type has no zone map;
 * a column dropped later is passed over.
 */
object ZoneMapMaintenance {
  val Property = "zonemap_columns"
  val ConfigKey = "sparklance.zonemap_columns"
  /** How many columns a table without `zonemap_columns` keeps zone maps of. */
  val DefaultColumns = 32
  private val All = "*"
  /** What a table without the property has, as the registry shows it (the columns follow the schema). */
  val Default = s"the first $DefaultColumns columns of types with zone maps"

  def validate(value: String): String = value.trim match {
    case "" => ""
    case All => All
    case _ =>
      val names = value.split(',').map(_.trim).toSeq
      if (names.exists(n => n.isEmpty || n == All)) throw new IllegalArgumentException(
        s"$Property must list column names separated by commas, or be '*' (every column) or '' (none), got '$value'")
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

  /** The columns `zonemap_columns` lists by name (none when unset, `'*'` or `''`). */
  def columns(config: Map[String, String]): Seq[String] =
    config.get(ConfigKey).filter(v => v.trim != All).toSeq.flatMap(_.split(',').map(_.trim)).filter(_.nonEmpty)

  /** The top-level fields of `schema` whose zone maps writes keep, as `config` says. */
  def fields(schema: LanceSchema, config: Map[String, String]): Seq[LanceField] = {
    val mapped = schema.fields.filter(f => ZoneValues.supports(f))
    config.get(ConfigKey).map(_.trim) match {
      case None => mapped.take(DefaultColumns)
      case Some(All) => mapped
      case Some(_) => columns(config).flatMap(schema.field).filter(f => ZoneValues.supports(f))
    }
  }

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
   * The zone maps a write of `schema` keeps on a table with `config` and the indices
   * `indexSection`: per column its index name and zone size (that of the column's existing zone
   * map, pylance's or create_index's, else pylance's default).
   */
  def plan(tableName: String, schema: LanceSchema, config: Map[String, String],
      indexSection: Option[Array[Byte]]): Seq[ZoneColumn] = {
    val chosen = fields(schema, config)
    if (chosen.isEmpty) Nil
    else {
      val existing = Indices.parse(indexSection, tableName)
      chosen.map { f =>
        val name = indexName(f.name, f.id, existing)
        ZoneColumn(name, f.id, ZoneMapSegment.zoneSize(existing.filter(_.getName == name)))
      }
    }
  }

  /**
   * The segments to commit with `fragments` (a write's new fragments, in the operation's order,
   * written under `schema`) for `columns`, from the zones the write tasks gathered; None when
   * there are none. A column some fragment has no zones of (never the case for fragments written
   * with these columns) gets no segment: its zone map just does not cover them.
   */
  def forWritten(storage: Storage, path: String, schema: LanceSchema, columns: Seq[ZoneColumn], zones: WrittenZones,
      fragments: Seq[DataFragment], foldAt: Int = ZoneMapFolding.AfterWrite): Option[NewFragmentIndices] =
    if (fragments.isEmpty) None
    else {
      val perColumn = columns.flatMap { c =>
        for (field <- schema.allFields.find(_.id == c.fieldId); found <- zones.of(c.fieldId, fragments))
          yield ZoneMapAppend.Column(c.indexName, c.fieldId, field.arrowType, c.rowsPerZone, found)
      }
      if (perColumn.isEmpty) None else Some(new ZoneMapAppend(storage, path, perColumn, foldAt))
    }

  /**
   * The zone maps a compaction of `dataset` keeps, from the zones its tasks gather: each folded
   * into one segment in the Rewrite's own version (see [[ZoneMapAppend]]), so a compaction of a
   * table with many zone-mapped columns adds no version per column.
   */
  def forCompaction(tableName: String, dataset: Dataset): Compaction.Indexing = new Compaction.Indexing {
    def zoneColumns(planned: Snapshot): Seq[ZoneColumn] =
      plan(tableName, planned.schema, planned.config, planned.file.indexSection)
    def segments(read: Snapshot, columns: Seq[ZoneColumn], fragments: Seq[DataFragment], zones: WrittenZones) =
      forWritten(dataset.storage, dataset.path, read.schema, columns, zones, fragments, foldAt = 2)
  }
}
