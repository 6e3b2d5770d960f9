package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.{DeletionFiles, PortableBitmaps}
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.{Dataset, RowAddress, Snapshot}

/**
 * Rebases a Delete or Update onto the latest version once [[ConflictRules]] found no conflict
 * but some concurrent Delete / Update touched the same fragments (Ruling.MergeDeletions): where a
 * fragment's deletion vector moved on, our deletions are merged into the current one as a fresh
 * deletion file, unless both statements changed the same row (a conflict), as Lance's resolver
 * does. Rows updated in place count as changed rows on either side: a fragment whose columns one
 * statement rewrote (its file replaced for all rows, the changed rows recorded) still takes the
 * other's deletions of other rows; two statements that both rewrote columns of one fragment, or a
 * column rewrite whose rows are not recorded, conflict.
 */
private[commit] object RowLevelRebase {
  /** The rebased operation and the deletion files written for it. */
  final case class Rebased(op: Operation, written: Seq[(Long, DeletionFile)])

  /** Raised through `conflict(version, theirs, detail)`, which must throw. */
  type Conflict = (Long, Option[Transaction], String) => Nothing

  /**
   * `op` was built on `base`; `touching` are the versions after it, up to `latest`, that changed
   * fragments `op` also changes. Returns `op` itself when nothing needs rewriting.
   */
  def rebase(dataset: Dataset, op: Operation, base: Snapshot, latest: Snapshot,
      touching: Seq[(Long, Transaction)], conflict: Conflict): Rebased = {
    val (updated, removed, offsets, inPlace) = op match {
      case Operation.Delete(u, r, _, o) => (u, r, o, Map.empty[Long, RoaringBitmap])
      case Operation.Update(r, u, _, o, p) => (u, r, o, p.fold(Map.empty[Long, RoaringBitmap])(_.rows))
      case other => throw new IllegalArgumentException(s"not a row-level operation: ${other.name}")
    }
    val touched = updated.map(_.getId).toSet ++ removed
    // The rows we changed in each fragment: deleted (or moved) and updated in place.
    def ours(id: Long): Option[RoaringBitmap] = (offsets.get(id).toSeq ++ inPlace.get(id)).reduceOption(RoaringBitmap.or)
    // The last version that changed each of our fragments, to name it in conflicts, and the rows
    // other statements rewrote in place there, whose data files replaced the ones we read.
    val lastTouch = scala.collection.mutable.Map.empty[Long, (Long, Option[Transaction])]
    val theirColumns = scala.collection.mutable.Map.empty[Long, RoaringBitmap]
    for ((v, t) <- touching) {
      val (theirUpdated, theirRemoved) =
        if (t.hasDelete) (t.getDelete.getUpdatedFragmentsList.asScala.map(_.getId), t.getDelete.getDeletedFragmentIdsList.asScala.map(_.toLong))
        else (t.getUpdate.getUpdatedFragmentsList.asScala.map(_.getId), t.getUpdate.getRemovedFragmentIdsList.asScala.map(_.toLong))
      theirRemoved.find(touched).foreach(id => conflict(v, Some(t), s"it removed fragment $id, which we also changed"))
      val rewroteColumns = t.hasUpdate && t.getUpdate.getFieldsModifiedCount > 0
      theirUpdated.filter(touched).foreach { id =>
        val mine = ours(id).getOrElse(
          conflict(v, Some(t), s"it changed fragment $id, which we also changed, and the rows we changed there are unknown"))
        // A statement that rewrote columns names the rows of each fragment it rewrote; its other
        // fragments only lost rows (whose files, if they changed anyway, are checked below).
        val rewritten = if (!rewroteColumns) None
          else Option(t.getUpdate.getUpdatedFragmentOffsetBitmapsMap.get(id)).map(b => PortableBitmaps.fromBytes(b.toByteArray))
        rewritten.foreach { theirs =>
          if (inPlace.contains(id)) conflict(v, Some(t), s"it rewrote columns of fragment $id, whose columns we also rewrote")
          if (RoaringBitmap.intersects(theirs, mine))
            conflict(v, Some(t), s"both changed ${RoaringBitmap.andCardinality(theirs, mine)} row(s) of fragment $id")
          theirColumns(id) = theirColumns.get(id).fold(theirs)(RoaringBitmap.or(_, theirs))
        }
        lastTouch(id) = v -> Some(t)
      }
    }

    val baseById = base.fragments.map(f => f.getId -> f).toMap
    val latestById = latest.fragments.map(f => f.getId -> f).toMap
    val updatedById = updated.map(f => f.getId -> f).toMap
    val rewritten = scala.collection.mutable.Map.empty[Long, Option[DataFragment]] // None = now fully deleted
    val written = Seq.newBuilder[(Long, DeletionFile)]
    for (id <- touched.toSeq.sorted) {
      val (byV, by) = lastTouch.getOrElse(id, latest.version -> None)
      val was = baseById.getOrElse(id, conflict(latest.version, None, s"fragment $id is not in version ${base.version}"))
      val now = latestById.getOrElse(id, conflict(byV, by, s"fragment $id, which we changed, was removed"))
      val filesReplaced = now.getFilesList != was.getFilesList
      if (filesReplaced && !theirColumns.contains(id))
        conflict(byV, by, s"the data files of fragment $id, which we changed, were replaced, and the rows changed there are unknown")
      if (filesReplaced || deletionFileOf(now) != deletionFileOf(was)) {
        val mine = ours(id).getOrElse(
          conflict(byV, by, s"it changed fragment $id, which we also changed, and the rows we changed there are unknown"))
        val current = DeletionFiles.read(dataset.storage, latest.files, now)
        if (RoaringBitmap.intersects(current, mine)) {
          val both = RoaringBitmap.and(current, mine)
          val sample = both.iterator().asScala.take(5).map(o => s"${RowAddress.of(id, o)}").mkString(", ")
          conflict(byV, by, s"both deleted or updated ${both.getLongCardinality} row(s) of fragment $id (row addresses $sample)")
        }
        val deletions = offsets.getOrElse(id, new RoaringBitmap())
        val all = RoaringBitmap.or(current, deletions)
        // Our column file on their deletions, or their column file (or none) with ours.
        val onto = if (inPlace.contains(id)) updatedById(id) else now
        rewritten(id) =
          if (all.getLongCardinality == now.getPhysicalRows) None
          else if (deletions.isEmpty) Some(if (now.hasDeletionFile) onto.toBuilder.setDeletionFile(now.getDeletionFile).build()
            else onto.toBuilder.clearDeletionFile().build())
          else {
            val file = DeletionFiles.write(dataset.storage, dataset.path, id, latest.version, all)
            written += id -> file
            Some(onto.toBuilder.setDeletionFile(file).build())
          }
      }
    }
    if (rewritten.isEmpty) return Rebased(op, Nil)

    val newUpdated = updated.flatMap(f => rewritten.getOrElse(f.getId, Some(f))) ++
      rewritten.collect { case (id, Some(f)) if removed.contains(id) => f }
    val newRemoved = removed.filterNot(id => rewritten.get(id).exists(_.isDefined)) ++
      rewritten.collect { case (id, None) if !removed.contains(id) => id }.toSeq.sorted
    val rebased = op match {
      case d: Operation.Delete => d.copy(updated = newUpdated, deletedIds = newRemoved)
      case u: Operation.Update =>
        // Rows of fragments now gone entirely are no longer updated in place there.
        val gone = newRemoved.toSet
        u.copy(updated = newUpdated, removedIds = newRemoved,
          inPlace = u.inPlace.map(p => p.copy(rows = p.rows.filterNot { case (id, _) => gone(id) })).filter(_.rows.nonEmpty))
      case other => other
    }
    Rebased(rebased, written.result())
  }

  private def deletionFileOf(f: DataFragment): Option[DeletionFile] =
    if (f.hasDeletionFile) Some(f.getDeletionFile) else None
}
