package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import scala.util.control.NonFatal
import sparklance.format.{CorruptFileException, TableNotFoundException, VersionNotFoundException, VersionRemovedException}
import sparklance.format.commit.{CommitResult, Committer, Operation}
import sparklance.format.io.Storage

/** A Lance table at a path: lists its versions and opens snapshots of them. */
final class Dataset(val storage: Storage, val path: String) {
  private def versionsDir = Storage.join(path, "_versions")

  def exists: Boolean = VersionNaming.scan(path, storage.list(versionsDir).map(_.name))._2.nonEmpty

  /** All committed versions, ascending. Listing is the truth; the hint file is never trusted. */
  def versions: Seq[Long] = VersionNaming.scan(path, storage.list(versionsDir).map(_.name))._2

  /** The naming scheme of this table's manifests; V2 for a table that has none yet. */
  def naming: VersionNaming = VersionNaming.scan(path, storage.list(versionsDir).map(_.name))._1.getOrElse(VersionNaming.V2)

  def latestVersion: Long = versions.lastOption.getOrElse(throw new TableNotFoundException(path))

  /**
   * Creates the table as version 1: no rows, `schema`, data files of `storageVersion`, and stable
   * row ids if asked (a choice Lance only allows at creation). Fails if the table exists.
   */
  def create(schema: LanceSchema, storageVersion: StorageVersion = StorageVersion.Default, stableRowIds: Boolean = false,
      config: Map[String, String] = Map.empty): CommitResult =
    new Committer(this).commit(None,
      Operation.Overwrite(Nil, schema, config + (Committer.StorageVersionKey -> storageVersion.name), Some(stableRowIds)))

  /**
   * A writer of new fragments for the version `read`: its schema, data file version and rows per
   * file. Commit what it wrote (`finish()`) with an Append, or add it to a [[sparklance.format.commit.RowLevelCommit]].
   */
  def newWriter(read: Snapshot, allocator: BufferAllocator): FragmentWriter =
    new FragmentWriter(storage, path, read.schema, read.storageVersion, allocator, read.maxRowsPerFile)

  def snapshot(version: Option[Long] = None, forWrite: Boolean = false): Snapshot = {
    val (scheme, all) = VersionNaming.scan(path, storage.list(versionsDir).map(_.name))
    if (all.isEmpty) throw new TableNotFoundException(path)
    val v = version.getOrElse(all.last)
    if (!all.contains(v)) throw missing(v, all)
    val snap = load(scheme.get, v)
    val m = snap.manifest
    FeatureFlags.check(path, v, m.getReaderFeatureFlags, m.getWriterFeatureFlags, forWrite)
    snap
  }

  /** Why `version` cannot be opened, given the versions `all` the table has (ascending). */
  private def missing(version: Long, all: Seq[Long]): VersionNotFoundException =
    if (version >= 1 && version < all.last) new VersionRemovedException(path, version, all.head)
    else new VersionNotFoundException(path, version, all.last)

  /** Fails, as time travel to it must, if the table lacks `version` (removed by cleanup, or never there). */
  def checkVersion(version: Long): Unit = {
    val all = versions
    if (all.isEmpty) throw new TableNotFoundException(path)
    if (!all.contains(version)) throw missing(version, all)
  }

  private[format] def load(scheme: VersionNaming, version: Long): Snapshot = {
    val file = Storage.join(versionsDir, scheme.fileName(version))
    val bytes = try storage.readAll(file) catch {
      case NonFatal(e) => throw new CorruptFileException(file, s"cannot read manifest: ${e.getMessage}", e)
    }
    val decoded = ManifestFile.decode(file, bytes)
    if (decoded.manifest.getVersion != version)
      throw new CorruptFileException(file, s"names version $version but holds version ${decoded.manifest.getVersion}")
    Snapshot(path, scheme, decoded)
  }
}
