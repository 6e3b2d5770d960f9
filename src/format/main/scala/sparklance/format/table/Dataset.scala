package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import scala.util.control.NonFatal
import sparklance.format.{CorruptFileException, TableNotFoundException, VersionNotFoundException, VersionRemovedException}
import sparklance.format.commit.{CommitRecord, CommitResult, Committer, Operation, Statement}
import sparklance.format.io.{DecodedFileCache, Storage}

/**
 * A Lance table at a path: lists its versions and opens snapshots of them. `branch` names the
 * branch whose table this is (at `<root>/tree/<branch>`, see [[Branches]]); None for the main line.
 */
final class Dataset(val storage: Storage, val path: String, val branch: Option[String] = None) {
  /** The main line's table: this one, or the one this branch belongs to (where tags and branches are kept). */
  def root: Dataset = branch.fold(this)(b => new Dataset(storage, Branches.rootOf(path, b)))

  private def versionsDir = Storage.join(path, "_versions")

  /** Whether the table has versions and was not dropped with its files kept (see [[markDropped]]). */
  def exists: Boolean = listing().exists

  /** Whether the table was dropped from its catalog with its files kept (see [[markDropped]]). */
  def isDropped: Boolean = listing().dropped

  /**
   * Drops the table from its catalog without moving or deleting a file: a marker in `_versions`
   * (a name no Lance reader takes for a manifest) makes [[exists]] false and [[snapshotIfExists]]
   * None, while pylance still opens the path. For stores that cannot move a directory atomically
   * (object stores), where a move to a trash folder would be a copy of every file. Returns false
   * if the table was dropped already.
   */
  def markDropped(): Boolean =
    storage.putIfAbsent(Storage.join(versionsDir, Dataset.DroppedMarker),
      s"""{"dropped_at_millis": ${System.currentTimeMillis()}}""".getBytes(java.nio.charset.StandardCharsets.UTF_8))

  /** When [[markDropped]] dropped the table (the marker's modification time), if it did. */
  def droppedAtMillis: Option[Long] =
    storage.list(versionsDir).find(_.name == Dataset.DroppedMarker).map(_.modifiedMillis)

  /** Undoes [[markDropped]]. */
  def unmarkDropped(): Unit = storage.delete(Storage.join(versionsDir, Dataset.DroppedMarker))

  /** All committed versions, ascending. Listing is the truth; the hint file is never trusted. */
  def versions: Seq[Long] = listing().versions

  /** The naming scheme of this table's manifests; V2 for a table that has none yet. */
  def naming: VersionNaming = listing().naming

  def latestVersion: Long = versions.lastOption.getOrElse(throw new TableNotFoundException(path))

  /**
   * Creates the table as version 1: no rows, `schema`, data files of `storageVersion`, and stable
   * row ids if asked (a choice Lance only allows at creation). Fails if the table exists.
   */
  def create(schema: LanceSchema, storageVersion: StorageVersion = StorageVersion.Default, stableRowIds: Boolean = false,
      config: Map[String, String] = Map.empty): CommitResult =
    new Committer(this).commit(None,
      Operation.Overwrite(Nil, schema, config + (Committer.StorageVersionKey -> storageVersion.name), Some(stableRowIds)),
      record = Some(CommitRecord(Statement.CreateTable)))

  /**
   * A writer of new fragments for the version `read`: its schema, data file version and rows per
   * file. Commit what it wrote (`finish()`) with an Append, or add it to a [[sparklance.format.commit.RowLevelCommit]].
   */
  def newWriter(read: Snapshot, allocator: BufferAllocator): FragmentWriter =
    new FragmentWriter(storage, path, read.schema, read.storageVersion, allocator, read.maxRowsPerFile)

  def snapshot(version: Option[Long] = None, forWrite: Boolean = false): Snapshot =
    snapshotIfExists(version, forWrite).getOrElse(throw new TableNotFoundException(path))

  /**
   * [[snapshot]], or None if the table does not exist: one listing of `_versions` (on an object
   * store, one LIST request) serves both questions and gives the manifest's size, so reading it
   * takes one GET.
   */
  def snapshotIfExists(version: Option[Long] = None, forWrite: Boolean = false): Option[Snapshot] = {
    val listed = listing()
    Option.when(listed.exists)(listed.snapshot(version.getOrElse(listed.versions.last), forWrite))
  }

  /**
   * The latest snapshot: `known` itself while it is still the latest version (as after its own
   * commit, mostly), which the listing alone tells, without reading its manifest again.
   */
  def latest(known: Snapshot): Snapshot = {
    val listed = listing()
    if (!listed.exists) throw new TableNotFoundException(path)
    if (listed.versions.last == known.version) known else listed.snapshot(listed.versions.last)
  }

  /** One listing of `_versions`, from which any number of versions open without listing again. */
  def listing(): Listing = new Listing(storage.list(versionsDir))

  final class Listing private[Dataset] (entries: Seq[sparklance.format.io.FileEntry]) {
    private val (scheme, all) = VersionNaming.scan(path, entries.map(_.name))
    /** The committed versions, ascending. */
    def versions: Seq[Long] = all
    def naming: VersionNaming = scheme.getOrElse(VersionNaming.V2)
    /** Whether the table was dropped with its files kept (see [[markDropped]]). */
    def dropped: Boolean = Dataset.droppedIn(entries)
    /** Whether the listing shows a table: a version, and no drop. */
    def exists: Boolean = all.nonEmpty && !dropped
    /** The size of `version`'s manifest, if listed. */
    def manifestSize(version: Long): Option[Long] = {
      val name = naming.fileName(version)
      entries.find(_.name == name).map(_.size)
    }
    /** `version` as committed; fails as [[snapshot]] does if the table lacks it. */
    def snapshot(version: Long, forWrite: Boolean = false): Snapshot = {
      if (all.isEmpty) throw new TableNotFoundException(path)
      if (!all.contains(version)) throw missing(version, all)
      val snap = load(scheme.get, version, manifestSize(version))
      val m = snap.manifest
      FeatureFlags.check(path, version, m.getReaderFeatureFlags, m.getWriterFeatureFlags, forWrite)
      snap
    }
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

  /** Reads and decodes the manifest of `version`; `length` is its size if a listing gave it. */
  private[format] def load(scheme: VersionNaming, version: Long, length: Option[Long] = None): Snapshot = {
    val file = Storage.join(versionsDir, scheme.fileName(version))
    val bytes = try length.fold(storage.readAll(file))(storage.readAll(file, _)) catch {
      case NonFatal(e) => throw new CorruptFileException(file, s"cannot read manifest: ${e.getMessage}", e)
    }
    // Decoding a manifest of 10,000 fragments took a quarter of a point query's planning.
    val checksum = new java.util.zip.CRC32C()
    checksum.update(bytes)
    val decoded = DecodedFileCache.get(s"$file|manifest|${bytes.length}|${checksum.getValue}", (_: ManifestFile) => 4L * bytes.length)(
      ManifestFile.decode(file, bytes))
    if (decoded.manifest.getVersion != version)
      throw new CorruptFileException(file, s"names version $version but holds version ${decoded.manifest.getVersion}")
    Snapshot(path, scheme, decoded)
  }
}

object Dataset {
  /** The marker of [[Dataset.markDropped]], in `_versions`. */
  val DroppedMarker = "sparklance-dropped.json"

  private def droppedIn(entries: Seq[sparklance.format.io.FileEntry]): Boolean = entries.exists(_.name == DroppedMarker)
}
