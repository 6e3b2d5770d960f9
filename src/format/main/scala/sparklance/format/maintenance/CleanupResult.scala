package sparklance.format.maintenance

/**
 * What a cleanup removed (or, with `dryRun`, would remove): the versions whose manifests go,
 * every file, and the deletes that failed (path and error), which are left for the next cleanup
 * to find. `readVersion` is the newest version when it started; `oldestVersion` the oldest left.
 * `tagsInTheWay`: tags ("name (version v)") of versions the policy selects, which stay (a real
 * cleanup with `error_if_tagged_old_versions` fails on them instead).
 */
final case class CleanupResult(readVersion: Long, oldestVersion: Long, removedVersions: Seq[Long],
    files: Seq[CleanupFile], failedDeletes: Seq[(String, String)], dryRun: Boolean, tagsInTheWay: Seq[String] = Nil) {
  def count(kind: CleanupFileKind): Int = files.count(_.kind == kind)
  def bytesRemoved: Long = files.map(_.sizeBytes).sum
}
