package sparklance.format.commit

import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.Snapshot

/**
 * What reading one version of a table back found. A committer must tell a version that is not
 * there from one it could not read: after a put that may have written the manifest, only the
 * first proves the commit did not land.
 */
sealed trait VersionLookup

object VersionLookup {
  /** No manifest of that version exists. */
  case object Absent extends VersionLookup

  /**
   * The version and the transaction that created it: its `_transactions` file, else the manifest's
   * inline copy; None when neither can be read.
   */
  final case class Committed(snapshot: Snapshot, transaction: Option[Transaction]) extends VersionLookup

  /** The manifest exists or may exist but could not be read or decoded. */
  final case class Unreadable(cause: Throwable) extends VersionLookup
}
