package sparklance.format.commit

/** What the conflict rules say of our transaction against one committed after the version it read. */
sealed trait Ruling

object Ruling {
  /** Ours applies on top of theirs as it is. */
  case object Compatible extends Ruling

  /**
   * Both tombstone rows of a fragment: ours is rebased by merging its deletions into the
   * fragment's current deletion vector, which [[RowLevelRebase]] does when the rows are known
   * and disjoint (else it is a conflict).
   */
  case object MergeDeletions extends Ruling

  /**
   * A compaction rewrote fragments whose rows ours tombstones: ours is carried onto the new
   * fragments by [[RewriteTranslation]] (Lance would retry the statement).
   */
  case object ThroughRewrite extends Ruling

  /** A conflict that running the statement again, against the new version, can get past. */
  final case class Retryable(reason: String) extends Ruling

  /** A conflict where a retry may no longer mean what the statement meant (the table was replaced). */
  final case class Incompatible(reason: String) extends Ruling
}
