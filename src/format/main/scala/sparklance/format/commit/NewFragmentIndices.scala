package sparklance.format.commit

import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * Index segments describing the fragments a commit adds, which name those fragments by the ids
 * the commit assigns: the committer asks for them on each attempt, once the ids are known, and
 * lands them in the same version as the fragments, so no reader sees the fragments without them.
 */
trait NewFragmentIndices {
  /** The segments for the new fragments, given their ids in the operation's order, built on `readVersion`. */
  def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata]

  /** Removes the files of segments built for an attempt that did not land. */
  def discard(segments: Seq[IndexMetadata]): Unit
}
