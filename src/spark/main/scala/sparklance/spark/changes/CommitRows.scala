package sparklance.spark.changes

import org.roaringbitmap.RoaringBitmap
import sparklance.format.commit.Transactions
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.rowids.{ChangedRows, CommitChanges}
import sparklance.format.table.{Dataset, Snapshot}

/** The rows a commit changed, as change data reads them. */
object CommitRows {
  /** What commit `after.version` changed (`before`: the version before it, None for the table's first version). */
  def of(dataset: Dataset, before: Option[Snapshot], after: Snapshot): Seq[ChangedRows] = {
    // A restore brings rows back with their old versions: its changes are a diff of the two versions.
    val restore = before.isDefined && Transactions.committed(dataset, after.version, Some(after.naming))
      .exists(_.getOperationCase == Transaction.OperationCase.RESTORE)
    if (restore) CommitChanges.ofRestore(dataset.storage, before.get, after)
    else CommitChanges.of(dataset.storage, before, after)
  }

  /**
   * Every live row of `fragments` of `snapshot` as an insert at its version: the first rows of a
   * change-data stream that starts with the table as it is (Delta's initial snapshot).
   */
  def snapshot(dataset: Dataset, snapshot: Snapshot, fragments: Seq[sparklance.format.proto.TableProtos.DataFragment]): Seq[ChangedRows] =
    fragments.flatMap { f =>
      val live = RoaringBitmap.bitmapOfRange(0L, f.getPhysicalRows)
      live.andNot(sparklance.format.deletion.DeletionFiles.read(dataset.storage, snapshot.files, f))
      if (live.isEmpty) None else Some(ChangedRows(f, snapshot.version, newSide = true, live, new RoaringBitmap()))
    }
}
