package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.UnsupportedFeatureException
import sparklance.format.proto.TableProtos.Manifest

/** A Lance data file format version that sparklance writes (pylance's `data_storage_version`). */
sealed abstract class StorageVersion(val minor: Int) extends Product with Serializable {
  /** The file format version data files of this version record (`minor` too). */
  def major: Int = 2
  /** As Lance spells it in manifests and table properties: "0.1" (legacy), "2.0", "2.1", "2.2". */
  def name: String = s"$major.$minor"
  override def toString: String = name
}

object StorageVersion {
  case object V2_0 extends StorageVersion(0)
  case object V2_1 extends StorageVersion(1)
  case object V2_2 extends StorageVersion(2)
  /** Lance's first format (V1): tables record "0.1", their files 0.2 (docs/format-v1-files.md). */
  case object Legacy extends StorageVersion(2) {
    override def major: Int = 0
    override def name: String = LegacyName
  }

  val Written: Seq[StorageVersion] = Seq(Legacy, V2_0, V2_1, V2_2)

  /** What new tables get, as in pylance (its "stable"). */
  val Default: StorageVersion = V2_2

  /**
   * A version by pylance's name for it: "0.1", "2.0", "2.1", "2.2", or the aliases "legacy" (V1,
   * as in pylance 14) and "stable" (2.2).
   */
  def parse(name: String): Option[StorageVersion] = name.trim.toLowerCase(java.util.Locale.ROOT) match {
    case "legacy" => Some(Legacy)
    case "stable" => Some(V2_2)
    case other => Written.find(_.name == other)
  }

  /**
   * Refuses columns the version cannot store, naming them, before a table or column is created
   * that no write could fill: maps need 2.2 (pylance refuses them below too).
   */
  def checkColumns(table: String, version: StorageVersion, fields: Seq[LanceField]): Unit = if (version != V2_2) {
    def refuse(f: LanceField, what: String, why: String) = throw new UnsupportedFeatureException(
      s"Column '${f.name}' of $table $what: $why, and this table's data_storage_version is ${version.name}; " +
        "create the table with TBLPROPERTIES ('data_storage_version' = '2.2')")
    fields.find(_.holdsMap).foreach(refuse(_, "is or holds a map", "Lance stores maps from data_storage_version 2.2 on"))
    fields.find(_.blobEncoding.contains(BlobEncoding.V2)).foreach(refuse(_, "is a blob column",
      "sparklance writes blob columns in data_storage_version 2.2 (pylance's blob v2)"))
  }

  /** How manifests name the legacy (V1) format that pylance 14 writes for `data_storage_version="legacy"`. */
  val LegacyName = "0.1"

  /**
   * The table version (as a manifest's data format names it) that a data file of format
   * `major.minor` belongs to: V1 files say 0.1 or 0.2 (pylance 14 writes 0.2 files into tables it
   * records as 0.1), and 0.3 is the old name of 2.0.
   */
  def ofFile(major: Int, minor: Int): String = (major, minor) match {
    case (0, 1) | (0, 2) => LegacyName
    case (0, 3) => V2_0.name
    case _ => s"$major.$minor"
  }

  /**
   * The table's version of data files: its manifest's data format, or where an old manifest has
   * none, as Lance infers it, the version of its first data file (2.0 for a table without files).
   */
  def ofManifest(m: Manifest): String =
    if (m.hasDataFormat && m.getDataFormat.getVersion.nonEmpty) m.getDataFormat.getVersion
    else m.getFragmentsList.asScala.flatMap(_.getFilesList.asScala).headOption
      .map(f => ofFile(f.getFileMajorVersion, f.getFileMinorVersion)).getOrElse(V2_0.name)

  /** Whether a data file of format `major.minor` is of the table version `tableVersion`. */
  def sameFileVersion(tableVersion: String, major: Int, minor: Int): Boolean = ofFile(major, minor) == tableVersion

  /** The version to write new files of a table in: the one it records, refused if sparklance cannot write it. */
  def forWriting(tablePath: String, recorded: String): StorageVersion = parse(recorded).getOrElse(
    throw new UnsupportedFeatureException(s"Writing Lance data files of version $recorded is not supported (table " +
      s"$tablePath); sparklance writes ${Written.map(_.name).mkString(", ")}"))
}
