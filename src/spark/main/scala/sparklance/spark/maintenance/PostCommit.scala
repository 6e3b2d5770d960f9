package sparklance.spark.maintenance

import java.io.InterruptedIOException
import java.nio.channels.ClosedByInterruptException
import org.slf4j.LoggerFactory

/**
 * Work that follows a landed commit in the same statement: compaction, zone map folds, cleanup.
 * The commit stands whatever becomes of it. [[run]] lets nothing through, neither an exception nor
 * an Error (OutOfMemoryError, a linkage failure) nor an interrupt, whose flag it sets again so that
 * the thread still sees the request; a thread already interrupted (a cancelled statement) skips it.
 * Callers run it only after the commit's files are marked as published, so that not even a
 * throwable from here could make Spark's abort delete them.
 */
final class PostCommit private (tableName: String, version: Long, work: () => Unit) {
  def run(): Unit =
    if (Thread.currentThread().isInterrupted)
      PostCommit.log.info(s"Maintenance of $tableName after version $version skipped: the statement was interrupted")
    else try work() catch {
      case e: Throwable =>
        if (PostCommit.isInterrupt(e)) Thread.currentThread().interrupt()
        PostCommit.log.warn(s"Maintenance of $tableName after version $version did not run to the end; " +
          "the statement committed and stands", e)
    }
}

object PostCommit {
  private val log = LoggerFactory.getLogger(getClass)

  /** Nothing to do after the commit (or nothing was committed). */
  val Nothing: PostCommit = new PostCommit("", 0L, () => ())

  def apply(tableName: String, version: Long)(work: => Unit): PostCommit = new PostCommit(tableName, version, () => work)

  private def isInterrupt(e: Throwable): Boolean = e match {
    case _: InterruptedException | _: InterruptedIOException | _: ClosedByInterruptException => true
    case _ => false
  }
}
