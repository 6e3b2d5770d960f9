package sparklance.format.commit

/**
 * Rows a statement inserted, updated and deleted, as the statement counted them (an updated row
 * is not also counted as deleted and inserted, unlike the history's rows_added / rows_deleted,
 * which count what moved on disk).
 */
final case class RowCounts(inserted: Long, updated: Long, deleted: Long) {
  require(inserted >= 0 && updated >= 0 && deleted >= 0, s"row counts are never negative: $this")
  def +(other: RowCounts): RowCounts = RowCounts(inserted + other.inserted, updated + other.updated, deleted + other.deleted)
}

object RowCounts {
  val None: RowCounts = RowCounts(0, 0, 0)
  def inserted(rows: Long): RowCounts = RowCounts(rows, 0, 0)
  def deleted(rows: Long): RowCounts = RowCounts(0, 0, rows)
}
