package sparklance.format.commit

import scala.util.control.NonFatal
import sparklance.format.CommitStateUnknownException

/** What a failed commit leaves behind, for callers that clean up after it. */
object CommitFailure {
  /**
   * Whether `failure`, thrown by a commit, proves that no manifest of it exists or ever will, so
   * the files it wrote may be deleted. [[Committer]] throws CommitStateUnknownException whenever one
   * may; an interrupt, an Error or a linkage failure may come from anywhere, after a put too, so
   * they prove nothing.
   */
  def leftNothing(failure: Throwable): Boolean = failure match {
    case _: CommitStateUnknownException => false
    case NonFatal(_) => true
    case _ => false
  }
}
