package sparklance.format.maintenance

import java.time.{Duration, Instant}
import sparklance.format.InvalidOptionException

/**
 * Which versions a cleanup removes, as Lance's cleanup policy: those committed more than
 * `olderThan` ago and older than the newest `retainVersions`; a filter not given selects every
 * version (pylance's `cleanup_old_versions` applies 14 days when given neither:
 * [[CleanupPolicy.DefaultOlderThan]]). The newest version and tagged versions always stay; a
 * tagged version that would otherwise go fails the cleanup when `errorIfTaggedOldVersions`.
 * `deleteUnverified` also removes files no manifest names that are younger than 7 days, which an
 * unfinished write may still commit: only safe with no writers.
 */
final case class CleanupPolicy(
    olderThan: Option[Duration] = None,
    retainVersions: Option[Int] = None,
    deleteUnverified: Boolean = false,
    errorIfTaggedOldVersions: Boolean = true) {
  olderThan.foreach(d => if (d.isNegative) throw new InvalidOptionException(CleanupPolicy.OlderThan, s"$d is negative"))
  retainVersions.foreach(n => if (n < 1) throw new InvalidOptionException(CleanupPolicy.RetainVersions,
    s"$n: the newest version always stays, so keep at least 1"))

  /**
   * Whether a version, committed at `committed`, falls to the filters, given all versions
   * (ascending) and the time the cleanup started.
   */
  def selects(version: Long, committed: Instant, versions: Seq[Long], now: Instant): Boolean = {
    val oldEnough = olderThan.forall(d => committed.isBefore(now.minus(d)))
    // Lance keeps versions from the n-th newest on (all of them when there are no more than n).
    val belowRetained = retainVersions.forall { n =>
      version < (if (versions.size <= n) versions.head else versions(versions.size - n))
    }
    oldEnough && belowRetained
  }
}

object CleanupPolicy {
  /**
   * The policy of Lance's automatic cleanup after a commit of `version`, if the table config asks
   * for one then: `lance.auto_cleanup.interval` n runs it when n divides the version (0: always),
   * with `lance.auto_cleanup.older_than` (humantime, as `'3600s'`) and
   * `lance.auto_cleanup.retain_versions`, never failing on tagged versions. A value that does not
   * parse is an [[InvalidOptionException]] naming its key.
   */
  def automatic(config: Map[String, String], version: Long): Option[CleanupPolicy] =
    config.get(AutoInterval).flatMap { interval =>
      val n = interval.trim.toLongOption.filter(_ >= 0).getOrElse(
        throw new InvalidOptionException(AutoInterval, s"'$interval' is not a whole number of versions"))
      if (n != 0 && version % n != 0) None
      else Some(CleanupPolicy(
        olderThan = config.get(AutoOlderThan).map(Durations.parse(AutoOlderThan, _)),
        retainVersions = config.get(AutoRetainVersions).map(v => v.trim.toIntOption.getOrElse(
          throw new InvalidOptionException(AutoRetainVersions, s"'$v' is not a whole number of versions"))),
        errorIfTaggedOldVersions = false))
    }

  val AutoPrefix = "lance.auto_cleanup."
  val AutoInterval: String = AutoPrefix + "interval"
  val AutoOlderThan: String = AutoPrefix + "older_than"
  val AutoRetainVersions: String = AutoPrefix + "retain_versions"

  val OlderThan = "older_than"
  val RetainVersions = "retain_versions"
  val DeleteUnverified = "delete_unverified"
  val ErrorIfTaggedOldVersions = "error_if_tagged_old_versions"
  val DefaultOlderThan: Duration = Duration.ofDays(14)
  /** Files no manifest names are left alone this long: an unfinished write may still commit them. */
  val UnverifiedAfter: Duration = Duration.ofDays(7)
}
