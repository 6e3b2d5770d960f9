package sparklance.format.commit

import sparklance.format.table.Snapshot

final case class CommitResult(snapshot: Snapshot) { def version: Long = snapshot.version }
