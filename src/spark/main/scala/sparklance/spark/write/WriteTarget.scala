package sparklance.spark.write

import sparklance.format.io.Storage
import sparklance.format.proto.FileProtos
import sparklance.format.commit.NewFragmentIndices
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{WrittenZones, ZoneColumn}
import sparklance.format.table.{BasePaths, LanceSchema, Snapshot, StorageVersion}
import sparklance.hadoop.Storages
import sparklance.spark.{CatalogSettings, TableProperties}
import sparklance.spark.indexing.ZoneMapMaintenance

/**
 * Everything an executor needs to write data files for a table, in serializable form
 * (Arrow types are not serializable, so the schema travels as its protobuf fields), and the
 * zone maps whose zones the tasks gather while writing.
 */
final case class WriteTarget(
    tableName: String,
    files: BasePaths,
    schemaFields: Array[Array[Byte]],
    dataStorageVersion: StorageVersion,
    maxRowsPerFile: Long,
    storageConf: Map[String, String],
    zoneColumns: Seq[ZoneColumn] = Nil) {
  def schema: LanceSchema = LanceSchema.fromProto(schemaFields.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
  /** Where new files go; `files` also finds those of the version written on (which a shallow clone or branch may keep elsewhere). */
  def tablePath: String = files.tablePath
  def storage: Storage = Storages.forPath(tablePath, storageConf)

  override def toString: String = s"WriteTarget($tableName, $tablePath, $dataStorageVersion, maxRowsPerFile=$maxRowsPerFile, " +
    s"storageConf=${CatalogSettings.redacted(storageConf)})"
}

object WriteTarget {
  /**
   * Writing `schema` into a table whose config is `config` and indices `indexSection`: files of
   * `version`, cut at its max_rows_per_file, with the zones of the zone maps the table keeps.
   */
  def apply(tableName: String, files: BasePaths, schema: LanceSchema, version: StorageVersion, config: Map[String, String],
      settings: CatalogSettings, indexSection: Option[Array[Byte]]): WriteTarget =
    WriteTarget(tableName, files, schema.toProto.map(_.toByteArray).toArray, version,
      TableProperties.maxRowsPerFile(config), settings.storageConf, ZoneMapMaintenance.plan(tableName, schema, config, indexSection))

  /** Writing into an existing table, as its version `snapshot` says. */
  def of(tableName: String, snapshot: Snapshot, settings: CatalogSettings): WriteTarget =
    apply(tableName, snapshot.files, snapshot.schema, snapshot.storageVersion, snapshot.config, settings, snapshot.file.indexSection)

  /** The segments of the zone maps of `target` over `fragments` it wrote, whose zones its tasks gathered. */
  def zoneMaps(target: WriteTarget, zones: WrittenZones, fragments: Seq[DataFragment]): Option[NewFragmentIndices] =
    ZoneMapMaintenance.forWritten(target.storage, target.tablePath, target.schema, target.zoneColumns, zones, fragments)
}
