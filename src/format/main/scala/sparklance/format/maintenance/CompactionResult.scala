package sparklance.format.maintenance

/**
 * What a compaction did. `version` is the Rewrite it committed (None when there was nothing to
 * do); `replanned` counts the groups that lost a race with a statement that changed their
 * fragments and were planned again from the newer version.
 */
final case class CompactionResult(
    readVersion: Long,
    version: Option[Long],
    fragmentsRemoved: Int,
    fragmentsAdded: Int,
    filesRemoved: Int,
    filesAdded: Int,
    rowsRewritten: Long,
    replanned: Int,
    leftAlone: Seq[LeftAlone])
