package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.DeletionFiles
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.{Dataset, RowAddress, Snapshot}

/**
 * Rebases a Delete or Update onto the latest version once [[ConflictRules]] found no conflict
 * but some concurrent Delete / Update touched the same fragments (Ruling.MergeDeletions): every
 * fragment we touch must still be there with the same data files, and where its deletion
 * vector moved on, our deletions are merged into the current one as a fresh deletion file,
 * unless both statements deleted the same row (a conflict), as Lance's resolver does.
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
    val (updated, removed, offsets) = op match {
      case Operation.Delete(u, r, _, o) => (u, r, o)
      case Operation.Update(r, u, _, o, _) => (u, r, o)
      case other => throw new IllegalArgumentException(s"not a row-level operation: ${other.name}")
    }
    val touched = updated.map(_.getId).toSet ++ removed
    // The last version that changed each of our fragments, to name it in conflicts.
    val lastTouch = scala.collection.mutable.Map.empty[Long, (Long, Option[Transaction])]
    for ((v, t) <- touching) {
      val (theirUpdated, theirRemoved) =
        if (t.hasDelete) (t.getDelete.getUpdatedFragmentsList.asScala.map(_.getId), t.getDelete.getDeletedFragmentIdsList.asScala.map(_.toLong))
        else (t.getUpdate.getUpdatedFragmentsList.asScala.map(_.getId), t.getUpdate.getRemovedFragmentIdsList.asScala.map(_.toLong))
      theirRemoved.find(touched).foreach(id => conflict(v, Some(t), s"it removed fragment $id, which we also changed"))
      theirUpdated.filter(touched).foreach { id =>
        if (!offsets.contains(id))
          conflict(v, Some(t), s"it changed fragment $id, which we also changed, and the rows we changed there are unknown")
        lastTouch(id) = v -> Some(t)
      }
    }

    val baseById = base.fragments.map(f => f.getId -> f).toMap
    val latestById = latest.fragments.map(f => f.getId -> f).toMap
    val rewritten = scala.collection.mutable.Map.empty[Long, Option[DataFragment]] // None = now fully deleted
    val written = Seq.newBuilder[(Long, DeletionFile)]
    for (id <- touched.toSeq.sorted) {
      val (byV, by) = lastTouch.getOrElse(id, latest.version -> None)
      val was = baseById.getOrElse(id, conflict(latest.version, None, s"fragment $id is not in version ${base.version}"))
      val now = latestById.getOrElse(id, conflict(byV, by, s"fragment $id, which we changed, was removed"))
      if (now.getFilesList != was.getFilesList)
        conflict(byV, by, s"the data files of fragment $id, which we changed, were replaced")
      if (deletionFileOf(now) != deletionFileOf(was)) {
        val ours = offsets.getOrElse(id,
          conflict(byV, by, s"it changed fragment $id, which we also changed, and the rows we changed there are unknown"))
        val current = DeletionFiles.read(dataset.storage, dataset.path, now)
        if (RoaringBitmap.intersects(current, ours)) {
          val both = RoaringBitmap.and(current, ours)
          val sample = both.iterator().asScala.take(5).map(o => s"${RowAddress.of(id, o)}").mkString(", ")
          conflict(byV, by, s"both deleted or updated ${both.getLongCardinality} row(s) of fragment $id (row addresses $sample)")
        }
        val all = RoaringBitmap.or(current, ours)
        rewritten(id) =
          if (all.getLongCardinality == now.getPhysicalRows) None
          else {
            val file = DeletionFiles.write(dataset.storage, dataset.path, id, latest.version, all)
            written += id -> file
            Some(now.toBuilder.setDeletionFile(file).build())
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
      case u: Operation.Update => u.copy(updated = newUpdated, removedIds = newRemoved)
      case other => other
    }
    Rebased(rebased, written.result())
  }

  private def deletionFileOf(f: DataFragment): Option[DeletionFile] =
    if (f.hasDeletionFile) Some(f.getDeletionFile) else None
}
