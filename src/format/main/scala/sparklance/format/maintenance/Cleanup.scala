package sparklance.format.maintenance

import java.time.Instant
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.{LanceException, Parallel}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.{FileEntry, Storage}
import sparklance.format.table.{Branches, Dataset, FeatureFlags, ManifestFile, Snapshot, Tags, VersionNaming}

/**
 * Removes old versions of a table and the files only they need, with the semantics of pylance's
 * `cleanup_old_versions` (LANCE-MAINTENANCE.md §2), so that either tool may clean a table the
 * other writes:
 *  - every manifest is read (an unreadable one, or one with feature flags we do not know, stops
 *    the cleanup before anything is deleted: its files might be live);
 *  - a version goes when the [[CleanupPolicy]] selects it, unless it is the newest one (or newer:
 *    committed meanwhile) or tagged;
 *  - a file goes when no kept manifest names it and either a removed manifest named it
 *    ("verified") or it is older than 7 days (or the policy deletes unverified files); index
 *    directories go by the uuid manifests name them by;
 *  - `_versions`, `_transactions` and `_deletions` are only listed up to the time of the oldest
 *    kept manifest, and `data/` up to the later of that and 7 days ago, so files of commits in
 *    flight are not even seen.
 * Only Lance's own directories and extensions are examined; anything else stays.
 *
 * Old manifests are deleted before the files they name: a cleanup that dies midway leaves
 * unreferenced files (the next cleanup finds them) rather than versions whose files are gone.
 */
final class Cleanup(dataset: Dataset, parallelism: Int = Cleanup.DefaultParallelism) {
  private val storage = dataset.storage
  private def at(relative: String) = Storage.join(dataset.path, relative)

  /**
   * Decides what `policy` removes, as of `now`, without deleting anything. Versions from
   * `keepFrom` on stay too (Lance's automatic cleanup keeps the version its commit read).
   */
  def plan(policy: CleanupPolicy, now: Instant = Instant.now(), keepFrom: Long = Long.MaxValue): Cleanup.Plan = {
    // The newest version first, then the listing: a version the listing misses is newer than
    // this one, so kept manifests still name every file it shares with older versions.
    val latest = dataset.snapshot(forWrite = true)
    val listing = storage.list(at("_versions")).flatMap(e => VersionNaming.parse(e.name).map { case (n, v) => (v, n, e) })
    val versions = listing.map(_._1).sorted
    // Each line (the main one, each branch) is cleaned on its own, as pylance does: a version stays
    // while a tag of this line names it or a branch was made from it (the branch's versions name
    // its files); files of other bases (a branch's parent, a clone's source) are never examined.
    val tags = new Tags(dataset).list.filter(_.branch == dataset.branch)
    val branches = new Branches(dataset).list
    val branchedFrom = branches.filter(_.parentBranch == dataset.branch).map(_.parentVersion).toSet
    // A branch "dev/_indices/x" (pylance allows the name) has its table inside dev's _indices/: not an index of dev's.
    val branchTables = dataset.branch.toSeq.flatMap(b => branches.map(_.name).filter(Branches.insideOwnDirectory(b, _)))
      .map(Branches.location(dataset.root.path, _))
    val tagged = tags.map(_.version).toSet ++ branchedFrom

    val manifests = inParallel(listing.sortBy(_._1)) { case (v, naming, entry) =>
      read(v, naming).map(s => Cleanup.Manifest(s, entry, Cleanup.References.of(s)))
    }.flatten
    val (kept, removed) = manifests.partition { m =>
      m.snapshot.version >= math.min(latest.version, keepFrom) || tagged(m.snapshot.version) ||
        !policy.selects(m.snapshot.version, m.committed, versions, now)
    }
    val taggedOld = manifests.filter(m => tags.exists(_.version == m.snapshot.version) && m.snapshot.version < math.min(latest.version, keepFrom) &&
      policy.selects(m.snapshot.version, m.committed, versions, now)).map(_.snapshot.version)
    val tagsInTheWay = tags.filter(t => taggedOld.contains(t.version)).map(t => s"${t.name} (version ${t.version})")

    // pylance keeps what a version a branch was made from names, except its transaction file.
    def keptOnlyForBranches(m: Cleanup.Manifest) = branchedFrom(m.snapshot.version) &&
      !tags.exists(_.version == m.snapshot.version) && m.snapshot.version < math.min(latest.version, keepFrom) &&
      policy.selects(m.snapshot.version, m.committed, versions, now)
    val referenced = Cleanup.References.union(kept.map(m =>
      if (keptOnlyForBranches(m)) m.references.copy(files = m.references.files.filterNot(_.startsWith("_transactions/")))
      else m.references))
    val verified = Cleanup.References.union(removed.map(_.references))
    val earliestKept = kept.map(_.committed).min
    // Listing up to the oldest kept manifest only works when every kept version is newer than
    // every removed one; a tagged old version breaks that, and then everything is listed.
    val metadataCutoff = if (removed.exists(_.committed.isAfter(earliestKept))) None else Some(earliestKept)
    val youngSince = now.minus(CleanupPolicy.UnverifiedAfter)
    val dataCutoff = if (policy.deleteUnverified) None else metadataCutoff.map(c => if (c.isAfter(youngSince)) c else youngSince)

    def mayBeInFlight(e: FileEntry) = !policy.deleteUnverified && !Instant.ofEpochMilli(e.modifiedMillis).isBefore(youngSince)
    def listed(dir: String, cutoff: Option[Instant]): Seq[FileEntry] =
      storage.list(at(dir)).filter(e => cutoff.forall(c => !Instant.ofEpochMilli(e.modifiedMillis).isAfter(c)))
    /** The file, if it goes: unreferenced, and either verified or past the window. */
    def decide(path: String, entry: FileEntry, kind: CleanupFileKind, isReferenced: Boolean, isVerified: Boolean) =
      if (isReferenced) None
      else if (isVerified) Some(CleanupFile(path, kind, unverified = false, entry.size))
      else if (!mayBeInFlight(entry)) Some(CleanupFile(path, kind, unverified = true, entry.size))
      else None

    val temporary = listed("_versions", metadataCutoff).filter(_.name.startsWith(".tmp"))
      .flatMap(e => decide(s"_versions/${e.name}", e, CleanupFileKind.TemporaryManifest, isReferenced = false, isVerified = false))
    val transactions = listed("_transactions", metadataCutoff).filter(_.name.endsWith(".txn")).flatMap { e =>
      val p = s"_transactions/${e.name}"
      decide(p, e, CleanupFileKind.Transaction, referenced.files(p), verified.files(p))
    }
    val deletions = listed("_deletions", metadataCutoff).filter(e => e.name.endsWith(".arrow") || e.name.endsWith(".bin"))
      .flatMap { e =>
        val p = s"_deletions/${e.name}"
        decide(p, e, CleanupFileKind.Deletion, referenced.files(p), verified.files(p))
      }
    val data = listed("data", dataCutoff).flatMap { e =>
      val p = s"data/${e.name}"
      if (e.name.endsWith(".lance")) decide(p, e, CleanupFileKind.Data, referenced.files(p), verified.files(p))
      else if (e.name.startsWith(".tmp")) decide(p, e, CleanupFileKind.Data, isReferenced = false, isVerified = false)
      else None
    }
    // Blob sidecars live or go with the data file they belong to, data/<file key>.lance.
    val blobs = storage.listDirectories(at("data")).flatMap { key =>
      val owner = s"data/$key.lance"
      listed(s"data/$key", dataCutoff).filter(_.name.endsWith(".blob"))
        .flatMap(e => decide(s"data/$key/${e.name}", e, CleanupFileKind.Data, referenced.files(owner), verified.files(owner)))
    }
    val indices = storage.listDirectories(at("_indices"))
      .filterNot { uuid =>
        val d = at(s"_indices/$uuid")
        branchTables.exists(t => t == d || t.startsWith(d + "/") || d.startsWith(t + "/"))
      }.flatMap { uuid =>
      walk(s"_indices/$uuid").flatMap { case (p, e) =>
        decide(p, e, CleanupFileKind.Index, referenced.indexUuids(uuid), verified.indexUuids(uuid))
      }
    }
    val oldManifests = removed.map(m => CleanupFile(s"_versions/${m.entry.name}", CleanupFileKind.Manifest,
      unverified = false, m.entry.size))
    Cleanup.Plan(latest.version, kept.map(_.snapshot.version).min, removed.map(_.snapshot.version),
      oldManifests, temporary ++ transactions ++ deletions ++ data ++ blobs ++ indices, tagsInTheWay)(
      removed.map(m => m.snapshot.version -> m).toMap)
  }

  /** Plans and, unless `dryRun`, deletes: old manifests first (oldest first), then the files, in parallel. */
  def run(policy: CleanupPolicy, dryRun: Boolean = false, now: Instant = Instant.now(), keepFrom: Long = Long.MaxValue): CleanupResult = {
    val plan = this.plan(policy, now, keepFrom)
    // A dry run shows what the cleanup would do with the tagged versions kept, and which tags kept them.
    if (dryRun) return CleanupResult(plan.readVersion, plan.oldestVersion, plan.removedVersions,
      plan.manifests ++ plan.files, Nil, dryRun = true, plan.tagsInTheWay)
    if (policy.errorIfTaggedOldVersions && plan.tagsInTheWay.nonEmpty)
      throw new LanceException(s"Cleanup of ${dataset.path}: ${plan.tagsInTheWay.size} tagged version(s) would be removed; " +
        s"delete the tag(s) ${plan.tagsInTheWay.mkString(", ")} or clean up without failing on tagged versions " +
        s"(${CleanupPolicy.ErrorIfTaggedOldVersions} = false), which keeps them")
    val manifestOutcomes = plan.manifests.map(f => f -> attempt(f.path))
    // A manifest that cannot be deleted keeps its version, which still needs its files.
    if (manifestOutcomes.exists(_._2.isDefined)) {
      val failed = manifestOutcomes.collect { case (f, Some(e)) => f.path -> e }
      return CleanupResult(plan.readVersion, plan.oldestVersion, plan.removedVersions,
        manifestOutcomes.collect { case (f, None) => f }, failed, dryRun = false)
    }
    // A commit since the plan may name files only removed versions named (a RESTORE of one of
    // them): those stay. Looked at after the manifests went, so that a restore that still finds
    // its version once it committed knows this cleanup will see it (see Restore).
    // Likewise a branch made since the plan from a removed version needs that version, as a tag
    // would: its manifest is put back (this line's later cleanups keep it, and its files, for the
    // branch) and its files stay. Looked at after the manifests went, as for a restore (see
    // Branches.create, which takes a branch back when its version's manifest is gone once it is made).
    val rescued = new Branches(dataset).list.filter(_.parentBranch == dataset.branch).map(_.parentVersion).distinct
      .flatMap(plan.removed.get)
    rescued.foreach(m => storage.putIfAbsent(at(s"_versions/${m.entry.name}"),
      ManifestFile.encode(m.snapshot.manifest, m.snapshot.file.indexSection, None)))
    val since = Cleanup.References.union(referencedSince(plan.readVersion) +: rescued.map(_.references))
    val files = plan.files.filterNot(f => since.files(f.path) ||
      (f.kind == CleanupFileKind.Index && since.indexUuids(f.path.split('/')(1))))
    val fileOutcomes = inParallel(files)(f => f -> attempt(f.path))
    // Index and blob directories whose every file went are removed too (best effort: empty directories cost nothing).
    val emptied = fileOutcomes.collect { case (f, None) if f.kind == CleanupFileKind.Index => f.path.split('/').take(2).mkString("/") }
      .distinct.filter(dir => walk(dir).isEmpty)
    emptied.foreach(dir => attempt(dir))
    val back = rescued.map(m => s"_versions/${m.entry.name}").toSet
    CleanupResult(plan.readVersion, plan.oldestVersion, plan.removedVersions.filterNot(v => rescued.exists(_.snapshot.version == v)),
      plan.manifests.filterNot(f => back(f.path)) ++ fileOutcomes.collect { case (f, None) => f },
      fileOutcomes.collect { case (f, Some(e)) => f.path -> e }, dryRun = false)
  }

  /** What the versions committed after `version` name; a version that cannot be read stops the cleanup. */
  private def referencedSince(version: Long): Cleanup.References = {
    val listing = dataset.listing()
    Cleanup.References.union(listing.versions.filter(_ > version).map { v =>
      read(v, listing.naming).fold(Cleanup.References(Set.empty, Set.empty))(Cleanup.References.of)
    })
  }

  /** Deletes a file; None when it is gone (a file already gone counts: concurrent cleanups are fine). */
  private def attempt(relative: String): Option[String] =
    try { storage.delete(at(relative)); None } catch { case NonFatal(e) => Some(String.valueOf(e.getMessage)) }

  /** Every file under `dir` (relative to the table), with its path. */
  private def walk(dir: String): Seq[(String, FileEntry)] =
    storage.list(at(dir)).map(e => s"$dir/${e.name}" -> e) ++ storage.listDirectories(at(dir)).flatMap(d => walk(s"$dir/$d"))

  /** The version, or None if a concurrent cleanup deleted its manifest after we listed it. */
  private def read(version: Long, naming: VersionNaming): Option[Snapshot] = {
    val snapshot = try dataset.load(naming, version) catch {
      case NonFatal(_) if !storage.exists(at(s"_versions/${naming.fileName(version)}")) => return None
    }
    val m = snapshot.manifest
    FeatureFlags.check(dataset.path, version, m.getReaderFeatureFlags, m.getWriterFeatureFlags, forWrite = true)
    Some(snapshot)
  }

  private def inParallel[A, B](items: Seq[A])(f: A => B): Seq[B] = Parallel.map(items, parallelism)(f)
}

object Cleanup {
  /** Deletes (and manifest reads) in flight at once: object stores answer each in tens of milliseconds. */
  val DefaultParallelism = 16

  /**
   * What a cleanup will do: the versions whose manifests go, those manifests, then every other
   * file, by path inside the table (`removed`: the removed versions as read).
   */
  final case class Plan(readVersion: Long, oldestVersion: Long, removedVersions: Seq[Long],
      manifests: Seq[CleanupFile], files: Seq[CleanupFile], tagsInTheWay: Seq[String] = Nil)(private[maintenance] val removed: Map[Long, Manifest] = Map.empty)

  private[maintenance] final case class Manifest(snapshot: Snapshot, entry: FileEntry, references: References) {
    def committed: Instant = Instant.ofEpochSecond(snapshot.manifest.getTimestamp.getSeconds, snapshot.manifest.getTimestamp.getNanos)
  }

  /** The files (paths inside the table) and index directories (by uuid) a set of manifests names. */
  private[maintenance] final case class References(files: Set[String], indexUuids: Set[String])

  private[maintenance] object References {
    def of(s: Snapshot): References = {
      // Files with a base id live in another dataset (a clone's source, a branch's parent): never ours to delete.
      val data = s.fragments.flatMap(_.getFilesList.asScala).filterNot(_.hasBaseId).map(f => s"data/${f.getPath}")
      val deletions = s.fragments.filter(f => f.hasDeletionFile && !f.getDeletionFile.hasBaseId)
        .map(f => DeletionFiles.relativePath(f.getId, f.getDeletionFile))
      val transaction = Option(s.manifest.getTransactionFile).filter(_.nonEmpty).map(t => s"_transactions/$t")
      val indices = Indices.parse(s.file.indexSection, s"${s.tablePath} version ${s.version}").filterNot(_.hasBaseId).map(Indices.directory)
      References((data ++ deletions ++ transaction).toSet, indices.toSet)
    }

    def union(all: Seq[References]): References = References(all.flatMap(_.files).toSet, all.flatMap(_.indexUuids).toSet)
  }
}
