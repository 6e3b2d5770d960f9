package sparklance.format.commit

import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.Snapshot

/**
 * Index segments describing the fragments a commit adds, which name those fragments by the ids
 * the commit assigns: the committer asks for them on each attempt, once the ids are known, and
 * lands them in the same version as the fragments, so no reader sees the fragments without them.
 */
trait NewFragmentIndices {
  /** The segments for the new fragments, given their ids in the operation's order, built on `readVersion`. */
  def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata]

  /**
   * The segments to land for the new fragments, and which of `current` (the indices the commit
   * leaves on `base` otherwise) they replace; `live` are the ids of the fragments the new version
   * has. By default [[segments]], replacing none. A compaction folds each zone map into one
   * segment here, in its own version.
   */
  def landing(ids: Seq[Long], base: Option[Snapshot], current: Seq[IndexMetadata], live: Set[Long]): NewFragmentIndices.Landing =
    NewFragmentIndices.Landing(segments(ids, base.fold(0L)(_.version)), Nil)

  /** Removes the files of segments built for an attempt that did not land. */
  def discard(segments: Seq[IndexMetadata]): Unit
}

object NewFragmentIndices {
  /** Segments written for a commit, and the segments (of the index section it builds on) they replace. */
  final case class Landing(added: Seq[IndexMetadata], replaced: Seq[IndexMetadata])
}
