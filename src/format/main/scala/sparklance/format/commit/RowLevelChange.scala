package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import sparklance.format.LanceException
import sparklance.format.deletion.DeletionFiles
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Turns the row offsets a DELETE / UPDATE / MERGE removed into an operation on `read`: each
 * touched fragment gets one new deletion file holding its old and new deletions, and a fragment
 * whose rows are all gone is dropped instead. The operation also carries the newly deleted
 * offsets, so that the committer can rebase it onto concurrent row-level commits.
 */
object RowLevelChange {
  def build(dataset: Dataset, read: Snapshot, deleted: Map[Long, RoaringBitmap], newFragments: Seq[DataFragment],
      isDelete: Boolean, predicate: String): Operation = {
    val byId = read.fragments.map(f => f.getId -> f).toMap
    val touched = deleted.toSeq.filter(!_._2.isEmpty).sortBy(_._1).map { case (id, offsets) =>
      val fragment = byId.getOrElse(id, throw new LanceException(
        s"Rows of fragment $id were deleted, but version ${read.version} of ${dataset.path} has no such fragment"))
      val last = Integer.toUnsignedLong(offsets.last())
      if (last >= fragment.getPhysicalRows)
        throw new LanceException(s"Row offset $last is beyond fragment $id of ${dataset.path} (${fragment.getPhysicalRows} rows)")
      val before = DeletionFiles.read(dataset.storage, dataset.path, fragment)
      (fragment, RoaringBitmap.or(before, offsets), RoaringBitmap.andNot(offsets, before))
    }
    val (emptied, partial) = touched.partition { case (f, all, _) => all.getLongCardinality == f.getPhysicalRows }
    val updated = partial.map { case (f, all, _) =>
      f.toBuilder.setDeletionFile(DeletionFiles.write(dataset.storage, dataset.path, f.getId, read.version, all)).build()
    }
    val removed = emptied.map(_._1.getId)
    val fresh = touched.map { case (f, _, ours) => f.getId -> ours }.toMap
    if (isDelete && newFragments.isEmpty) Operation.Delete(updated, removed, predicate, fresh)
    else Operation.Update(removed, updated, newFragments, fresh)
  }
}
