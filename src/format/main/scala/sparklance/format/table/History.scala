package sparklance.format.table

import sparklance.format.commit.Transactions

/** One committed version as a table's history lists it. */
final case class HistoryEntry(version: Long, commitMicros: Long, operation: String, rowsAdded: Long, rowsDeleted: Long,
    rows: Long)

/**
 * A table's versions with what each commit did, from manifests and transactions alone: rows
 * added are the physical rows of fragments the commit created; rows deleted are the live rows
 * it removed (tombstoned, or dropped with their fragments), so an update counts in both.
 */
object History {
  def of(dataset: Dataset): Seq[HistoryEntry] = {
    var previous: Option[Snapshot] = None
    var before = 0L
    dataset.versions.map { v =>
      val s = dataset.snapshot(Some(v))
      val known = previous.map(_.fragments.map(_.getId).toSet).getOrElse(Set.empty[Long])
      val added = s.fragments.filterNot(f => known.contains(f.getId)).map(_.getPhysicalRows).sum
      val rows = s.countRows(dataset.storage)
      val entry = HistoryEntry(v, s.commitMicros, Transactions.committed(dataset, v, Some(s.naming))
        .map(Transactions.operationName).getOrElse("unknown transaction"), added, before + added - rows, rows)
      previous = Some(s)
      before = rows
      entry
    }
  }
}
