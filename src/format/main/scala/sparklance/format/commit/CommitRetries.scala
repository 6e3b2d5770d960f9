package sparklance.format.commit

import java.time.Duration

/**
 * How long a commit keeps rebasing and retrying against concurrent writers before it fails with a
 * conflict: until it has retried `count` times and `time` has passed since it began. A count alone
 * fails writers on a loaded machine, where each round takes longer and more versions land during
 * it; the time floor lets a writer that keeps losing the race go on until it lands.
 */
final case class CommitRetries(count: Int = CommitRetries.DefaultCount, time: Duration = CommitRetries.DefaultTime) {
  require(count >= 0, s"commit retries must not be negative: $count")
  require(!time.isNegative, s"commit retry time must not be negative: $time")

  /** Whether a commit that began at `startNanos` (System.nanoTime) and retried `attempts` times may retry again. */
  def allowAnother(attempts: Int, startNanos: Long): Boolean =
    attempts < count || System.nanoTime() - startNanos < time.toNanos

  def describe: String = s"$count retries and ${time.toSeconds} s"
}

object CommitRetries {
  val DefaultCount = 20
  val DefaultTime: Duration = Duration.ofMinutes(2)
}
