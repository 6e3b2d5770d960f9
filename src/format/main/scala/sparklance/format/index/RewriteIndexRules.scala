package sparklance.format.index

import org.roaringbitmap.RoaringBitmap
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * What a compaction may do with indexed fragments, without ever rewriting an index file
 * (LANCE-MAINTENANCE.md §1.6, §4.4). Lance either remaps an index (new files) or forwards its
 * coverage; sparklance forwards coverage where that is correct and otherwise leaves the covered
 * fragments alone, as pylance does for indices it cannot open.
 */
object RewriteIndexRules {
  /** Whether the fragments `kind` covers must not be rewritten on this table. */
  def blocksRewrite(kind: IndexKind, stableRowIds: Boolean): Boolean = kind match {
    case IndexKind.RowIds => !stableRowIds // the ids are addresses there: rows would move under the index
    case IndexKind.RowAddresses | IndexKind.FragmentReuse | IndexKind.Unknown(_) => true
    case IndexKind.FragmentSummaries | IndexKind.System => false
  }

  /**
   * Whether an index's coverage decides which fragments may share a rewrite group (Lance's index
   * sets). Not fragment summaries (zone maps, bloom filters): a rewrite never remaps nor forwards
   * them (§1.6: untouched, or the rewritten ids dropped), and the compaction commits segments of
   * its own for its new fragments, so fragments of different segments may merge. Else the segment
   * every write adds would keep each write's fragments apart and compaction would merge nothing.
   */
  def bindsGroups(kind: IndexKind): Boolean =
    kind != IndexKind.System && kind != IndexKind.FragmentReuse && kind != IndexKind.FragmentSummaries

  /**
   * The index section after rewriting `groups` (old fragment ids -> new fragment ids). Row-id
   * indices on stable tables follow their rows to the new fragments; fragment summaries stop
   * covering rewritten fragments on stable tables (on others Lance leaves them be: a removed
   * fragment no longer counts); everything else must not cover a rewritten fragment at all.
   */
  def afterRewrite(indices: Seq[IndexMetadata], groups: Seq[(Seq[Long], Seq[Long])], stableRowIds: Boolean): Seq[IndexMetadata] =
    indices.map { index =>
      val kind = Indices.kind(index)
      Indices.coverage(index) match {
        case None =>
          if (blocksRewrite(kind, stableRowIds) && groups.nonEmpty)
            throw new IllegalStateException(s"compaction rewrote fragments an index of unknown coverage ${Indices.describe(index)} may hold")
          index
        case Some(covered) =>
          kind match {
            case IndexKind.System => index
            case IndexKind.FragmentSummaries if !stableRowIds => index
            case IndexKind.FragmentSummaries =>
              val left = covered.clone()
              groups.foreach { case (old, _) => old.foreach(id => left.remove(id.toInt)) }
              if (left == covered) index else Indices.withCoverage(index, left)
            case IndexKind.RowIds if stableRowIds => Indices.withCoverage(index, forwarded(index, covered, groups))
            case _ =>
              groups.flatMap(_._1).find(id => covered.contains(id.toInt)).foreach { id =>
                throw new IllegalStateException(s"compaction rewrote fragment $id, which index ${Indices.describe(index)} covers")
              }
              index
          }
      }
    }

  /** Lance's bitmap recalculation: a group wholly covered moves its coverage to its new fragments. */
  private def forwarded(index: IndexMetadata, covered: RoaringBitmap, groups: Seq[(Seq[Long], Seq[Long])]): RoaringBitmap = {
    val next = covered.clone()
    groups.foreach { case (old, created) =>
      val inside = old.count(id => covered.contains(id.toInt))
      if (inside == old.size) { old.foreach(id => next.remove(id.toInt)); created.foreach(id => next.add(id.toInt)) }
      else if (inside > 0)
        throw new IllegalStateException(s"a compaction group mixes fragments index ${Indices.describe(index)} covers with others")
    }
    next
  }
}
