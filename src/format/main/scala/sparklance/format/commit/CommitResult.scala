package sparklance.format.commit

import sparklance.format.table.Snapshot

/**
 * The version a commit created. `newest`: the listing of versions right after the put found none
 * newer, so `snapshot` was the table's latest then (work after the commit starts from it without
 * listing again); false where that is not known.
 */
final case class CommitResult(snapshot: Snapshot, newest: Boolean = false) { def version: Long = snapshot.version }
