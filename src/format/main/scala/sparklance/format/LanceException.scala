package sparklance.format

/** Errors a user or a damaged table can cause. Each names what is wrong and where. */
class LanceException(message: String, cause: Throwable = null) extends RuntimeException(message, cause)

/** A table, manifest or data file that cannot be decoded (truncated, bad magic, out-of-range offsets). */
class CorruptFileException(val path: String, detail: String, cause: Throwable = null)
  extends LanceException(s"Corrupt Lance file $path: $detail", cause)

/** The table uses a Lance feature (flag, encoding, file version, type) this library does not implement. */
class UnsupportedFeatureException(message: String) extends LanceException(message)

/**
 * Another writer committed a version this commit cannot be reconciled with; the table is as that
 * writer left it and nothing of this commit is referenced. `retryable`: running the statement
 * again (against the new version) can succeed; false when the table was replaced or restored
 * under it, where a retry may no longer mean what the statement meant.
 */
class CommitConflictException(val tablePath: String, val version: Long, detail: String, val retryable: Boolean = true)
  extends LanceException(s"Concurrent commit to $tablePath: version $version was committed by another writer; $detail")

/**
 * A manifest put failed in a way that may have written it (also later: an object store may finish
 * a request its client gave up on), and no other writer holds that version yet, or reading the
 * table back could not tell whether it did. The commit may have landed as `version`: nothing it
 * wrote may be deleted, and the statement must not simply be re-run. Read the table's history (its
 * latest version's transaction names the statement's uuid if it landed) once the store answers again.
 */
class CommitStateUnknownException(val tablePath: String, val version: Long, cause: Throwable)
  extends LanceException(s"Commit to $tablePath may or may not have landed as version $version: the manifest put " +
    s"failed or its outcome could not be established (${cause.getMessage}); its files are kept. Check the " +
    s"table's latest version before re-running the statement", cause)

/**
 * A file the version being read names is gone: a cleanup (vacuum) removed it while a statement
 * still read that version, or it was deleted by hand. Nothing was written; re-running reads the
 * newest version. Cleanups that keep versions for a while (`older_than`) leave running statements
 * their files.
 */
class FileGoneException(val tablePath: String, val file: String, cause: Throwable)
  extends LanceException(s"Lance table $tablePath: $file, which the version this statement reads names, is gone: a cleanup " +
    "(vacuum) removed it while the statement ran, or it was deleted by hand. Nothing was written; re-run the statement " +
    "(vacuum with older_than leaves statements that run meanwhile their files)", cause)

/** Runs `read` of `file`, turning a missing file into [[FileGoneException]]. */
object FileGoneException {
  def guard[T](tablePath: String, file: String)(read: => T): T =
    try read catch {
      case e @ (_: java.nio.file.NoSuchFileException | _: java.io.FileNotFoundException) => throw new FileGoneException(tablePath, file, e)
    }
}

class TableNotFoundException(val path: String) extends LanceException(s"No Lance table at $path")

/** A search that needs an index of kind `indexType` on `column`, which the table version has not. */
class IndexNotFoundException(val path: String, val column: String, val indexType: String, detail: String)
  extends LanceException(s"Column '$column' of $path has no $indexType index$detail")

/** A version the table does not have (see [[VersionRemovedException]] for one cleanup removed). */
class VersionNotFoundException(val path: String, val version: Long, message: String) extends LanceException(message) {
  def this(path: String, version: Long, latest: Long) =
    this(path, version, s"Lance table $path has no version $version; its latest version is $latest")
}

/** An option of a maintenance operation (or its table config key) with a name or value it cannot take. */
class InvalidOptionException(val option: String, detail: String) extends LanceException(s"Option $option: $detail")

/** A tag name the table does not have; names the tags it has. */
class TagNotFoundException(val path: String, val tag: String, known: Seq[String])
  extends LanceException(s"Lance table $path has no tag '$tag'; its tags are " +
    (if (known.isEmpty) "none" else known.map(t => s"'$t'").mkString(", ")))

/** Creating a tag whose name is taken; a tag is never moved silently. */
class TagAlreadyExistsException(val path: String, val tag: String, val version: Long)
  extends LanceException(s"Lance table $path already has tag '$tag' (on version $version); delete it first to move it")

/**
 * A version older than the table's newest that is gone: Lance numbers versions without gaps from
 * 1, so only cleanup (vacuum) removes one. Names the oldest version left, for time travel.
 */
class VersionRemovedException(path: String, version: Long, val oldest: Long, detail: String = "")
  extends VersionNotFoundException(path, version, s"Lance table $path no longer has version $version, which cleanup (vacuum) removed; " +
    s"the oldest version left is $oldest$detail")

/** A schema change (ALTER TABLE) a table cannot take; names the column and why. Nothing is written. */
class SchemaChangeException(val table: String, val column: String, detail: String)
  extends LanceException(s"Cannot change column '$column' of $table: $detail")

/** A name whose table was dropped with its files kept where they are (object stores): it is not free until they are dealt with. */
class DroppedTableKeptException(val table: String, val path: String, catalog: String)
  extends LanceException(s"$table was dropped without PURGE on a store that cannot move it to the trash, so its files are " +
    s"still at $path. Bring it back with CALL $catalog.system.undrop_table(table => '${table.split('.').tail.mkString(".")}'), " +
    s"or delete its files for good with CALL $catalog.system.purge_dropped_table(table => '${table.split('.').tail.mkString(".")}')")

/** A branch name the table does not have; names the branches it has. */
class BranchNotFoundException(val path: String, val branch: String, known: Seq[String])
  extends LanceException(s"Lance table $path has no branch '$branch'; its branches are " +
    (if (known.isEmpty) "none" else known.map(b => s"'$b'").mkString(", ")))

/** Creating a branch whose name is taken. */
class BranchAlreadyExistsException(val path: String, val branch: String)
  extends LanceException(s"Lance table $path already has branch '$branch'; delete it first (delete_branch) to create it anew")

/**
 * A branch name whose directory holds a table but no branch file names it: a creation that did not
 * finish (pylance leaves these too), or one under way. Never removed for the caller: it may be live.
 */
class UnfinishedBranchException(val path: String, val branch: String, val directory: String)
  extends LanceException(s"Lance table $path has no branch '$branch', but $directory holds versions of a table: an unfinished " +
    s"branch creation (or one under way). Once no creation of '$branch' is running, remove that directory to use the name")

/**
 * The writer `appId` already committed its transaction `txnVersion` (or a later one) as
 * `committedVersion` of the table: an idempotent write that must not land twice. Callers that
 * asked for the check treat it as success; the write's files were never published.
 */
class TxnAlreadyAppliedException(val tablePath: String, val appId: String, val txnVersion: Long, val committedVersion: Long,
    val committedTxnVersion: Long)
  extends LanceException(s"$tablePath already holds transaction $committedTxnVersion of application '$appId' " +
    s"(as of version $committedVersion), so its transaction $txnVersion is skipped")
