package sparklance.format.commit

import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.Snapshot

/**
 * What a statement read of the version it built on. Under serializable isolation a commit must
 * not land over rows that other writers added (or whose values they changed) after that version
 * when the statement's reads could have returned them: had it seen them, it might have done
 * something else (a MERGE would have updated the key it inserted, a DELETE removed the row).
 */
trait ReadSet {
  /**
   * Whether any live row of `fragments`, as they are in `snapshot`, could have been returned by
   * the statement's reads. Answering true when unsure is always safe.
   */
  def mayHaveRead(snapshot: Snapshot, fragments: Seq[DataFragment]): Boolean
}

object ReadSet {
  /** A blind write, such as INSERT ... VALUES: nothing it did depends on the table's rows. */
  val Blind: ReadSet = (_, _) => false

  /** A statement whose outcome may depend on any row. */
  val Everything: ReadSet = (_, fragments) => fragments.exists(_.getPhysicalRows > 0)

  /** What an operation read when its committer is not told: a row-level change read everything. */
  def assumedFor(op: Operation): ReadSet = op match {
    case _: Operation.Delete | _: Operation.Update => Everything
    case _ => Blind
  }
}
