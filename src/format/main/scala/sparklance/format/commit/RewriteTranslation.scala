package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.DeletionFiles
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Carries a Delete or Update across a compaction it did not see, instead of failing it (Lance
 * only retries, lance#6150). A Rewrite keeps every live row and their order: walking a group's
 * old fragments in order, offsets ascending, skipping rows deleted when it read them, the n-th
 * live row is the n-th row of the group's new fragments. So each row our statement removed has
 * exactly one new address, and our deletions move there as fresh deletion files.
 */
private[commit] object RewriteTranslation {
  def translate(dataset: Dataset, op: Operation, rewrite: Transaction.Rewrite, rewriteVersion: Long, after: Snapshot,
      conflict: RowLevelRebase.Conflict, theirs: Transaction): RowLevelRebase.Rebased = {
    val (updated, removed, offsets) = op match {
      case Operation.Delete(u, r, _, o) => (u, r, o)
      case Operation.Update(r, u, _, o, _) => (u, r, o)
      case other => throw new IllegalArgumentException(s"not a row-level operation: ${other.name}")
    }
    val touched = updated.map(_.getId).toSet ++ removed
    val groups = rewrite.getGroupsList.asScala.map(g => g.getOldFragmentsList.asScala.toSeq -> g.getNewFragmentsList.asScala.toSeq).toSeq ++
      (if (rewrite.getOldFragmentsCount > 0) Seq(rewrite.getOldFragmentsList.asScala.toSeq -> rewrite.getNewFragmentsList.asScala.toSeq) else Nil)
    val afterById = after.fragments.map(f => f.getId -> f).toMap
    val moved = mutable.Map.empty[Long, RoaringBitmap] // new fragment id -> offsets we remove there
    val replacedIds = mutable.Set.empty[Long]

    for ((olds, news) <- groups if olds.exists(f => touched(f.getId))) {
      // First row (in the group's live-row order) of each new fragment.
      val starts = news.scanLeft(0L)(_ + _.getPhysicalRows)
      var groupBase = 0L
      for (old <- olds) {
        val gone = DeletionFiles.read(dataset.storage, after.files, old)
        val id = old.getId
        val ours: RoaringBitmap =
          if (!touched(id)) new RoaringBitmap()
          else offsets.get(id).map(_.clone()).getOrElse {
            if (removed.contains(id)) RoaringBitmap.flip(gone, 0L, old.getPhysicalRows) // every row it still had
            else conflict(rewriteVersion, Some(theirs), s"it compacted fragment $id, which we also changed, and the rows we changed there are unknown")
          }
        if (RoaringBitmap.intersects(ours, gone))
          conflict(rewriteVersion, Some(theirs), s"rows of fragment $id that we changed were deleted before it compacted the fragment")
        ours.forEach { (offset: Int) =>
          // Live rows before this one: its offset less the deleted rows before it.
          val position = groupBase + Integer.toUnsignedLong(offset) - gone.rank(offset)
          val at = starts.lastIndexWhere(_ <= position) match { case i if i >= news.size => news.size - 1; case i => i }
          moved.getOrElseUpdate(news(at).getId, new RoaringBitmap()).add((position - starts(at)).toInt)
        }
        groupBase += old.getPhysicalRows - gone.getLongCardinality
        if (touched(id)) replacedIds += id
      }
    }

    val written = Seq.newBuilder[(Long, DeletionFile)]
    val newUpdated = mutable.ArrayBuffer.empty[DataFragment]
    val newRemoved = mutable.ArrayBuffer.empty[Long]
    for ((id, ours) <- moved.toSeq.sortBy(_._1)) {
      val now = afterById.getOrElse(id, conflict(rewriteVersion, Some(theirs), s"its new fragment $id is missing from version ${after.version}"))
      val all = RoaringBitmap.or(DeletionFiles.read(dataset.storage, after.files, now), ours)
      if (all.getLongCardinality == now.getPhysicalRows) newRemoved += id
      else {
        val file = DeletionFiles.write(dataset.storage, dataset.path, id, rewriteVersion, all)
        written += id -> file
        newUpdated += now.toBuilder.setDeletionFile(file).build()
      }
    }
    val keptUpdated = updated.filterNot(f => replacedIds(f.getId)) ++ newUpdated
    val keptRemoved = removed.filterNot(replacedIds) ++ newRemoved
    val keptOffsets = offsets.filterNot { case (id, _) => replacedIds(id) } ++ moved
    val translated = op match {
      case d: Operation.Delete => d.copy(updated = keptUpdated, deletedIds = keptRemoved, deletedOffsets = keptOffsets)
      case u: Operation.Update => u.copy(updated = keptUpdated, removedIds = keptRemoved, deletedOffsets = keptOffsets)
      case other => other
    }
    RowLevelRebase.Rebased(translated, written.result())
  }
}
