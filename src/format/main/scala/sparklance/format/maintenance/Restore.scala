package sparklance.format.maintenance

import sparklance.format.VersionRemovedException
import sparklance.format.commit.{CommitRecord, CommitResult, CommitRetries, Committer, Operation, Statement}
import sparklance.format.io.Storage
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Makes an old version the newest again (Lance's Restore), safely against a cleanup running at the
 * same time. The restored version names files that only old versions may name, which a cleanup
 * removes with those versions. So its files must all be there before it commits, and its manifest
 * must still be there once it committed: a cleanup deletes old manifests before their files, and
 * after deleting them it keeps every file named by a version committed since it planned (see
 * [[Cleanup]]). A manifest still there after our commit means any cleanup will see our version and
 * keep its files; a manifest gone means they may go, and the restore is undone by restoring the
 * version it replaced.
 */
object Restore {
  /** The version the restore replaced, and the one it committed. */
  final case class Result(replaced: Snapshot, committed: CommitResult)

  def run(dataset: Dataset, target: Snapshot, retries: CommitRetries = CommitRetries()): Result = {
    val storage = dataset.storage
    val missing = missingFiles(dataset, target)
    if (missing.nonEmpty) throw new VersionRemovedException(dataset.path, target.version, dataset.versions.head,
      s"; files it names are gone (${missing.take(3).mkString(", ")}${if (missing.size > 3) ", ..." else ""}), so it cannot be restored")
    val read = dataset.snapshot(forWrite = true)
    val committed = new Committer(dataset, retries).commit(Some(read), Operation.Restore(target), record = Some(CommitRecord(Statement.Restore)))
    val manifest = Storage.join(dataset.path, s"_versions/${target.naming.fileName(target.version)}")
    if (storage.exists(manifest)) Result(read, committed)
    else {
      val undone = new Committer(dataset, retries).commit(Some(committed.snapshot), Operation.Restore(read), record = Some(CommitRecord(Statement.Restore)))
      throw new VersionRemovedException(dataset.path, target.version, dataset.versions.head,
        s". A cleanup removed it while it was being restored, so the restore (version ${committed.version}) was undone by " +
          s"restoring version ${read.version} as version ${undone.version}")
    }
  }

  /** The files `snapshot` names that are not in the table's directories (one listing of each). */
  private def missingFiles(dataset: Dataset, snapshot: Snapshot): Seq[String] = {
    val named = Cleanup.References.of(snapshot)
    val directories = named.files.map(f => f.substring(0, f.lastIndexOf('/'))) + "_transactions"
    val present = directories.flatMap(d => dataset.storage.list(Storage.join(dataset.path, d)).map(e => s"$d/${e.name}"))
    val indices = dataset.storage.listDirectories(Storage.join(dataset.path, "_indices")).toSet
    // The transaction file is the old version's own record, not needed by the restored version.
    (named.files.filterNot(_.startsWith("_transactions/")) -- present).toSeq.sorted ++
      (named.indexUuids -- indices).toSeq.sorted.map(u => s"_indices/$u")
  }
}
