package sparklance.format.maintenance

/** What a file cleanup removes is to the table. */
sealed abstract class CleanupFileKind(val label: String)

object CleanupFileKind {
  case object Manifest extends CleanupFileKind("manifest")
  /** A data file, or a blob sidecar of one (`data/<file key>/<blob id>.blob`). */
  case object Data extends CleanupFileKind("data")
  case object Transaction extends CleanupFileKind("transaction")
  case object Deletion extends CleanupFileKind("deletion")
  /** A file of an index directory `_indices/<uuid>/`; the directory lives or goes as one. */
  case object Index extends CleanupFileKind("index")
  /** A temporary file an unfinished manifest put left in `_versions`. */
  case object TemporaryManifest extends CleanupFileKind("temporary manifest")
}

/**
 * A file cleanup removes (or, in a dry run, would remove), by its path inside the table.
 * `unverified`: no manifest, not even a removed one, names it; it goes because it is older than
 * the 7-day window (or the cleanup deletes unverified files).
 */
final case class CleanupFile(path: String, kind: CleanupFileKind, unverified: Boolean, sizeBytes: Long)
