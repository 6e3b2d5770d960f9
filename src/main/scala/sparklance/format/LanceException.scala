package sparklance.format

/** Errors a user or a damaged table can cause. Each names what is wrong and where. */
class LanceException(message: String, cause: Throwable = null) extends RuntimeException(message, cause)

/** A table, manifest or data file that cannot be decoded (truncated, bad magic, out-of-range offsets). */
class CorruptFileException(val path: String, detail: String, cause: Throwable = null)
  extends LanceException(s"Corrupt Lance file $path: $detail", cause)

/** The table uses a Lance feature (flag, encoding, file version, type) this library does not implement. */
class UnsupportedFeatureException(message: String) extends LanceException(message)

/** Another writer committed the version this commit wanted to create. */
class CommitConflictException(val tablePath: String, val version: Long, detail: String)
  extends LanceException(s"Concurrent commit to $tablePath: version $version was committed by another writer; $detail")

class TableNotFoundException(val path: String) extends LanceException(s"No Lance table at $path")

class VersionNotFoundException(val path: String, val version: Long)
  extends LanceException(s"Lance table $path has no version $version")
