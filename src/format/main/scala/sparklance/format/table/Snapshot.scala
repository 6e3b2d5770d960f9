package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.LanceException
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}

/** One version of a table: its manifest, decoded schema and fragments. Immutable. */
final case class Snapshot(tablePath: String, naming: VersionNaming, file: ManifestFile) {
  def manifest: Manifest = file.manifest
  /** Where this version's data, deletion and index files are. */
  lazy val files: BasePaths = BasePaths.of(tablePath, manifest)
  def version: Long = manifest.getVersion
  lazy val schema: LanceSchema = LanceSchema.fromProto(manifest.getFieldsList.asScala.toSeq, manifest.getSchemaMetadataMap)
  def fragments: Seq[DataFragment] = manifest.getFragmentsList.asScala.toSeq
  def config: Map[String, String] = manifest.getConfigMap.asScala.toMap
  /** The table metadata: user keys, which pylance shows as `ds.metadata`. */
  def tableMetadata: Map[String, String] = manifest.getTableMetadataMap.asScala.toMap

  /** The data file format version new files get ("0.1" for legacy V1, "2.0", "2.1", ...). */
  def dataStorageVersion: String = StorageVersion.ofManifest(manifest)

  /** The version new data files of this table are written in; one sparklance cannot write is refused. */
  def storageVersion: StorageVersion = StorageVersion.forWriting(tablePath, dataStorageVersion)

  /**
   * Plans a read of `columns` (top-level names; every column when empty): one [[FragmentRead]] per
   * fragment, to read in any order, on any thread or machine.
   */
  def plan(columns: Seq[String] = Nil): Seq[FragmentRead] = {
    val fields = if (columns.isEmpty) schema.fields else columns.map(c => schema.field(c).getOrElse(
      throw new LanceException(s"Lance table $tablePath version $version has no column '$c'")))
    fragments.map(FragmentRead(files, _, fields))
  }

  /** The rows per data file new fragments of this table are cut at (its `max_rows_per_file`). */
  def maxRowsPerFile: Long = FragmentWriter.maxRowsPerFile(config)

  def stableRowIds: Boolean = (manifest.getReaderFeatureFlags & FeatureFlags.StableRowIds) != 0

  /** When the version was committed, in microseconds since the epoch. */
  def commitMicros: Long = manifest.getTimestamp.getSeconds * 1000000L + manifest.getTimestamp.getNanos / 1000

  /** Live rows: from fragment metadata, reading only deletion files whose count it lacks. */
  def countRows(storage: Storage): Long = fragments.map(liveRows(storage, _)).sum

  /** Live rows of one of this version's fragments (see [[DeletionFiles.deletedRows]]). */
  def liveRows(storage: Storage, f: DataFragment): Long = f.getPhysicalRows - DeletionFiles.deletedRows(storage, files, f)
}
