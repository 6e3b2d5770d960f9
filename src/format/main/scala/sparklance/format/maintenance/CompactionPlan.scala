package sparklance.format.maintenance

import sparklance.format.proto.TableProtos.DataFragment

/**
 * Adjacent fragments to rewrite together into `outputRows.size` new fragments. `liveRows` is what
 * their metadata promises; the rewrite checks it against what it reads.
 */
final case class CompactionTask(fragments: Seq[DataFragment], liveRows: Long, targetRows: Long) {
  def fragmentIds: Seq[Long] = fragments.map(_.getId)

  /**
   * The row counts of the new fragments, as Lance spreads them: max(1, live / target) fragments,
   * the first `live % count` one row larger. No rows, no fragments.
   */
  def outputRows: Seq[Long] =
    if (liveRows == 0) Nil
    else {
      val count = math.max(1L, liveRows / targetRows)
      (0L until count).map(i => liveRows / count + (if (i < liveRows % count) 1 else 0))
    }
}

/** A fragment the planner would have rewritten but must not, and why. */
final case class LeftAlone(fragmentId: Long, reason: String)

/** What a compaction of version `readVersion` rewrites: independent tasks, in manifest order. */
final case class CompactionPlan(readVersion: Long, tasks: Seq[CompactionTask], leftAlone: Seq[LeftAlone]) {
  def isEmpty: Boolean = tasks.isEmpty
}
