package sparklance.spark.scan

import org.apache.spark.sql.types.StructType
import sparklance.format.io.Storage
import sparklance.format.proto.FileProtos
import sparklance.format.table.{BasePaths, LanceField, LanceSchema}
import sparklance.hadoop.Storages
import sparklance.spark.CatalogSettings

/**
 * What executors read: where the table version's files are, the projected Lance fields (as protobuf), Spark's read
 * schema, the decoded bytes a batch aims at, and for a row-level statement the condition that narrows the rows
 * read ([[Prefilter]]) and the key sets the rows handed over must hold a key of ([[KeySetFilter]]).
 */
final case class ReadTarget(tableName: String, files: BasePaths, fieldBytes: Array[Array[Byte]], readSchema: StructType,
    storageConf: Map[String, String], batchBytes: Long, prefilter: Option[Prefilter], keyFilters: Seq[KeySetFilter]) {
  def tablePath: String = files.tablePath
  def storage: Storage = Storages.forPath(tablePath, storageConf)

  def fields: Seq[LanceField] = ReadTarget.decode(fieldBytes)

  override def toString: String =
    s"ReadTarget($tableName, $tablePath, ${readSchema.simpleString}, storageConf=${CatalogSettings.redacted(storageConf)})"
}

object ReadTarget {
  def apply(tableName: String, files: BasePaths, fields: Seq[LanceField], readSchema: StructType,
      storageConf: Map[String, String], batchBytes: Long, prefilter: Option[Prefilter] = None,
      keyFilters: Seq[KeySetFilter] = Nil): ReadTarget =
    ReadTarget(tableName, files, encode(fields), readSchema, storageConf, batchBytes, prefilter, keyFilters)

  /** Lance fields as executors get them: the flattened protobuf form, each message as bytes. */
  def encode(fields: Seq[LanceField]): Array[Array[Byte]] = LanceSchema(fields).toProto.map(_.toByteArray).toArray
  def decode(bytes: Array[Array[Byte]]): Seq[LanceField] =
    LanceSchema.fromProto(bytes.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of()).fields
}
