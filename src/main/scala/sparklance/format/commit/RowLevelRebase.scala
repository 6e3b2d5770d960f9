package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.DeletionFiles
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Rebases a Delete or Update onto versions committed after the one it was built on, following
 * Lance's conflict resolver:
 *  - Append is a conflict under serializable isolation (its rows might match our condition) and
 *    compatible under snapshot isolation; CreateIndex, ReserveFragments, UpdateConfig and Project
 *    never conflict;
 *  - a Delete / Update is compatible when it touched none of our fragments; when it changed the
 *    deletion vector of a fragment we also touch (same data files, fragment still there), our
 *    new deletions are merged into the current vector as a fresh deletion file, unless both
 *    statements deleted the same row;
 *  - a Rewrite (compaction) of a fragment we touch, a fragment we touch that was removed or
 *    whose data files changed, Overwrite, Restore, Merge and anything unknown or unreadable are
 *    conflicts.
 */
private[commit] object RowLevelRebase {
  /** The rebased operation and the deletion files written for it. */
  final case class Rebased(op: Operation, written: Seq[(Long, DeletionFile)])

  /** Raised through `conflict(version, otherOperation, detail)`, which must throw. */
  type Conflict = (Long, String, String) => Nothing

  private val alwaysCompatible = Set("Append", "CreateIndex", "ReserveFragments", "UpdateConfig", "Project")

  /**
   * `op` was built on `base`; `newer` are the versions after `base` up to `latest` with their
   * transactions (None = unreadable). Returns `op` itself when nothing needs rewriting.
   */
  def rebase(dataset: Dataset, op: Operation, base: Snapshot, latest: Snapshot,
      newer: Seq[(Long, Option[Transaction])], conflict: Conflict, isolation: Isolation): Rebased = {
    val (updated, removed, offsets) = op match {
      case Operation.Delete(u, r, _, o) => (u, r, o)
      case Operation.Update(r, u, _, o) => (u, r, o)
      case other => throw new IllegalArgumentException(s"not a row-level operation: ${other.name}")
    }
    val touched = updated.map(_.getId).toSet ++ removed
    // The last version that changed each of our fragments, to name it in conflicts.
    val lastTouch = scala.collection.mutable.Map.empty[Long, (Long, String)]
    for ((v, txn) <- newer) {
      val t = txn.getOrElse(conflict(v, "unknown transaction", "its transaction cannot be read, so the commits cannot be reconciled"))
      val name = Transactions.operationName(t)
      t.getOperationCase match {
        case OperationCase.APPEND if isolation == Isolation.Serializable =>
          conflict(v, name, "it appended rows this statement never saw, which its condition might have matched " +
            "(serializable isolation; set the table property isolation_level = 'snapshot' to allow this)")
        case _ if alwaysCompatible(name) =>
        case OperationCase.REWRITE =>
          val rw = t.getRewrite
          val old = (rw.getOldFragmentsList.asScala ++ rw.getGroupsList.asScala.flatMap(_.getOldFragmentsList.asScala))
            .map(_.getId).toSet
          val hit = (old intersect touched).toSeq.sorted
          if (hit.nonEmpty) conflict(v, name, s"it compacted fragment(s) ${hit.mkString(", ")} that we also changed")
        case OperationCase.DELETE | OperationCase.UPDATE =>
          val (theirUpdated, theirRemoved) =
            if (t.hasDelete) (t.getDelete.getUpdatedFragmentsList.asScala.map(_.getId), t.getDelete.getDeletedFragmentIdsList.asScala.map(_.toLong))
            else (t.getUpdate.getUpdatedFragmentsList.asScala.map(_.getId), t.getUpdate.getRemovedFragmentIdsList.asScala.map(_.toLong))
          theirRemoved.find(touched).foreach(id => conflict(v, name, s"it removed fragment $id, which we also changed"))
          theirUpdated.filter(touched).foreach { id =>
            if (!offsets.contains(id))
              conflict(v, name, s"it changed fragment $id, which we also changed, and the rows we changed there are unknown")
            lastTouch(id) = v -> name
          }
        case _ => conflict(v, name, "it is incompatible with a concurrent row-level change")
      }
    }

    // Every fragment we touch must still be there with the same data files; where its deletion
    // vector moved on, ours is rebuilt from the current one.
    val baseById = base.fragments.map(f => f.getId -> f).toMap
    val latestById = latest.fragments.map(f => f.getId -> f).toMap
    val rewritten = scala.collection.mutable.Map.empty[Long, Option[DataFragment]] // None = now fully deleted
    val written = Seq.newBuilder[(Long, DeletionFile)]
    for (id <- touched.toSeq.sorted) {
      val (byV, byName) = lastTouch.getOrElse(id, latest.version -> "commit")
      val was = baseById.getOrElse(id, conflict(latest.version, "commit", s"fragment $id is not in version ${base.version}"))
      val now = latestById.getOrElse(id, conflict(byV, byName, s"fragment $id, which we changed, was removed"))
      if (now.getFilesList != was.getFilesList)
        conflict(byV, byName, s"the data files of fragment $id, which we changed, were replaced")
      if (deletionFileOf(now) != deletionFileOf(was)) {
        val ours = offsets.getOrElse(id,
          conflict(byV, byName, s"it changed fragment $id, which we also changed, and the rows we changed there are unknown"))
        val current = DeletionFiles.read(dataset.storage, dataset.path, now)
        if (RoaringBitmap.intersects(current, ours)) {
          val both = RoaringBitmap.and(current, ours)
          val sample = both.iterator().asScala.take(5).map(o => s"${sparklance.format.table.RowAddress.of(id, o)}").mkString(", ")
          conflict(byV, byName, s"both deleted or updated ${both.getLongCardinality} row(s) of fragment $id (row addresses $sample)")
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
