package sparklance.format.table

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.commit.CommitFailure
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment

/**
 * The data files one write produced, until its commit lands. When the write fails or is aborted
 * before its commit could have published them, they are deleted: nothing references them, so this
 * only saves space, and failures to delete are ignored. Once a manifest naming them may exist (the
 * commit returned, or failed in a way that does not prove it left nothing, see
 * [[CommitFailure.leftNothing]]) they are kept for good: whatever fails afterwards, post-commit
 * work included, and whatever Spark's abort asks, only vacuum removes them later.
 */
final class UncommittedFiles(storage: Storage, tablePath: String) {
  @volatile private var state: UncommittedFiles.State = UncommittedFiles.Unpublished

  /** Runs the commit of `fragments`; on a failure that proves nothing landed, deletes their files and rethrows. */
  def commit[T](fragments: Seq[DataFragment])(body: => T): T = {
    val result = try body catch {
      case e: Throwable if CommitFailure.leftNothing(e) => discard(fragments); throw e
      case e: Throwable => state = UncommittedFiles.MayBePublished; throw e
    }
    state = UncommittedFiles.Published
    result
  }

  /** Deletes the files of fragments that were never committed (an abort, a failed job); nothing once they may be. */
  def discard(fragments: Seq[DataFragment]): Unit =
    if (state == UncommittedFiles.Unpublished)
      for (f <- fragments; file <- f.getFilesList.asScala) {
        try storage.delete(Storage.join(tablePath, s"data/${file.getPath}")) catch { case NonFatal(_) => }
        // Its blob sidecars, if it has any (data/<file name without .lance>/).
        val sidecars = Storage.join(tablePath, s"data/${file.getPath.stripSuffix(".lance")}")
        try if (storage.exists(sidecars)) storage.deleteRecursively(sidecars) catch { case NonFatal(_) => }
      }
}

object UncommittedFiles {
  /** Whether a manifest may name the files. */
  sealed trait State
  /** No commit ran, or it failed leaving nothing: the files are debris. */
  case object Unpublished extends State
  /** The commit failed in a way that leaves its outcome open: a manifest may name the files. */
  case object MayBePublished extends State
  /** The commit landed: a manifest names the files. */
  case object Published extends State
}
