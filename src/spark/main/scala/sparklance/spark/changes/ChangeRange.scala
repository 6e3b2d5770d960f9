package sparklance.spark.changes

import sparklance.format.table.Snapshot

/**
 * The commits `first` to `last` (inclusive; first > last: none) of a change-data read, with the
 * versions they compare (`first - 1`, or 1, to `last`, consecutive) and how rows of each are
 * served in the schema of `last`.
 */
final case class ChangeRange(first: Long, last: Long, snapshots: Seq[Snapshot], schemas: Option[ChangeSchemas]) {
  def isEmpty: Boolean = first > last
  private lazy val byVersion = snapshots.map(s => s.version -> s).toMap
  def snapshot(version: Long): Option[Snapshot] = byVersion.get(version)
}
