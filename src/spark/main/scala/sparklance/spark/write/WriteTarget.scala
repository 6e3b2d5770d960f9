package sparklance.spark.write

import sparklance.format.io.Storage
import sparklance.format.proto.FileProtos
import sparklance.format.table.{BasePaths, LanceSchema, Snapshot, StorageVersion}
import sparklance.hadoop.Storages
import sparklance.spark.{CatalogSettings, TableProperties}

/**
 * Everything an executor needs to write data files for a table, in serializable form
 * (Arrow types are not serializable, so the schema travels as its protobuf fields).
 */
final case class WriteTarget(
    tableName: String,
    files: BasePaths,
    schemaFields: Array[Array[Byte]],
    dataStorageVersion: StorageVersion,
    maxRowsPerFile: Long,
    storageConf: Map[String, String]) {
  def schema: LanceSchema = LanceSchema.fromProto(schemaFields.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
  /** Where new files go; `files` also finds those of the version written on (which a shallow clone or branch may keep elsewhere). */
  def tablePath: String = files.tablePath
  def storage: Storage = Storages.forPath(tablePath, storageConf)

  override def toString: String = s"WriteTarget($tableName, $tablePath, $dataStorageVersion, maxRowsPerFile=$maxRowsPerFile, " +
    s"storageConf=${CatalogSettings.redacted(storageConf)})"
}

object WriteTarget {
  /** Writing `schema` into a table whose config is `config`: files of `version`, cut at its max_rows_per_file. */
  def apply(tableName: String, files: BasePaths, schema: LanceSchema, version: StorageVersion, config: Map[String, String],
      settings: CatalogSettings): WriteTarget =
    WriteTarget(tableName, files, schema.toProto.map(_.toByteArray).toArray, version,
      TableProperties.maxRowsPerFile(config), settings.storageConf)

  /** Writing into an existing table, as its version `snapshot` says. */
  def of(tableName: String, snapshot: Snapshot, settings: CatalogSettings): WriteTarget =
    apply(tableName, snapshot.files, snapshot.schema, snapshot.storageVersion, snapshot.config, settings)
}
