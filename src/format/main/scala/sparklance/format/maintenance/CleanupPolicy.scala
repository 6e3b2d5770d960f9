package sparklance.format.maintenance

import java.time.{Duration, Instant}
import sparklance.format.InvalidOptionException

/**
 * Which versions a cleanup removes, as pylance's `cleanup_old_versions`: those committed more
 * than `olderThan` ago and (when given) older than the newest `retainVersions`; both filters
 * must agree. With neither, `olderThan` is 14 days, Lance's default. The newest version and
 * tagged versions always stay; a tagged version that would otherwise go fails the cleanup when
 * `errorIfTaggedOldVersions`. `deleteUnverified` also removes files no manifest names that are
 * younger than 7 days, which an unfinished write may still commit: only safe with no writers.
 */
final case class CleanupPolicy(
    olderThan: Option[Duration] = None,
    retainVersions: Option[Int] = None,
    deleteUnverified: Boolean = false,
    errorIfTaggedOldVersions: Boolean = true) {
  olderThan.foreach(d => if (d.isNegative) throw new InvalidOptionException(CleanupPolicy.OlderThan, s"$d is negative"))
  retainVersions.foreach(n => if (n < 1) throw new InvalidOptionException(CleanupPolicy.RetainVersions,
    s"$n: the newest version always stays, so keep at least 1"))

  /** The age filter in force: the given one, or Lance's default when no filter is given. */
  def effectiveOlderThan: Option[Duration] =
    if (olderThan.isEmpty && retainVersions.isEmpty) Some(CleanupPolicy.DefaultOlderThan) else olderThan

  /**
   * Whether a version, committed at `committed`, falls to the filters, given all versions
   * (ascending) and the time the cleanup started.
   */
  def selects(version: Long, committed: Instant, versions: Seq[Long], now: Instant): Boolean = {
    val oldEnough = effectiveOlderThan.forall(d => committed.isBefore(now.minus(d)))
    // Lance keeps versions from the n-th newest on (all of them when there are no more than n).
    val belowRetained = retainVersions.forall { n =>
      version < (if (versions.size <= n) versions.head else versions(versions.size - n))
    }
    oldEnough && belowRetained
  }
}

object CleanupPolicy {
  val OlderThan = "older_than"
  val RetainVersions = "retain_versions"
  val DeleteUnverified = "delete_unverified"
  val ErrorIfTaggedOldVersions = "error_if_tagged_old_versions"
  val DefaultOlderThan: Duration = Duration.ofDays(14)
  /** Files no manifest names are left alone this long: an unfinished write may still commit them. */
  val UnverifiedAfter: Duration = Duration.ofDays(7)
}
