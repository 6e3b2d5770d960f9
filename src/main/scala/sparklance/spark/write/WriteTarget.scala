package sparklance.spark.write

import sparklance.format.io.Storage
import sparklance.format.proto.FileProtos
import sparklance.format.table.LanceSchema
import sparklance.spark.CatalogSettings

/**
 * Everything an executor needs to write data files for a table, in serializable form
 * (Arrow types are not serializable, so the schema travels as its protobuf fields).
 */
final case class WriteTarget(
    tableName: String,
    tablePath: String,
    schemaFields: Array[Array[Byte]],
    dataStorageVersion: String,
    maxRowsPerFile: Long,
    storageConf: Map[String, String]) {
  def schema: LanceSchema = LanceSchema.fromProto(schemaFields.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
  def storage: Storage = Storage.forPath(tablePath, storageConf)

  override def toString: String = s"WriteTarget($tableName, $tablePath, $dataStorageVersion, maxRowsPerFile=$maxRowsPerFile, " +
    s"storageConf=${CatalogSettings.redacted(storageConf)})"
}

object WriteTarget {
  def apply(tableName: String, tablePath: String, schema: LanceSchema, dataStorageVersion: String, maxRowsPerFile: Long,
      storageConf: Map[String, String]): WriteTarget =
    WriteTarget(tableName, tablePath, schema.toProto.map(_.toByteArray).toArray, dataStorageVersion, maxRowsPerFile, storageConf)
}
