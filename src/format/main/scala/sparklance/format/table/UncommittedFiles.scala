package sparklance.format.table

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.CommitStateUnknownException
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment

/**
 * The data files one write produced, until its commit lands. When the write fails or is aborted
 * they are deleted: nothing references them, so this only saves space, and failures to delete
 * are ignored. Once a commit failed with CommitStateUnknownException a manifest may reference
 * them, so they are kept for good, also when Spark aborts the write after the failed commit.
 */
final class UncommittedFiles(storage: Storage, tablePath: String) {
  @volatile private var mayBeCommitted = false

  /** Runs the commit of `fragments`; on a definite failure deletes their files and rethrows. */
  def commit[T](fragments: Seq[DataFragment])(body: => T): T =
    try body catch {
      case e: CommitStateUnknownException => mayBeCommitted = true; throw e
      case NonFatal(e) => discard(fragments); throw e
    }

  /** Deletes the files of fragments that were never committed (an abort, a failed job). */
  def discard(fragments: Seq[DataFragment]): Unit =
    if (!mayBeCommitted)
      for (f <- fragments; file <- f.getFilesList.asScala) {
        try storage.delete(Storage.join(tablePath, s"data/${file.getPath}")) catch { case NonFatal(_) => }
        // Its blob sidecars, if it has any (data/<file name without .lance>/).
        val sidecars = Storage.join(tablePath, s"data/${file.getPath.stripSuffix(".lance")}")
        try if (storage.exists(sidecars)) storage.deleteRecursively(sidecars) catch { case NonFatal(_) => }
      }
}
