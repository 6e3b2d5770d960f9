package sparklance.format.commit

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase

/** Rows one committed version brought into the table that a statement reading the version before never saw. */
object ConcurrentRows {
  /**
   * The fragments of `committed` that are new since `previous` or whose data files changed: rows
   * appended, rewritten by an UPDATE / MERGE, restored or overwritten, and column values replaced.
   * A compaction only moves rows, and Merge / Project add or drop columns without changing the
   * values of the others, so they bring in nothing a statement on the earlier columns could read.
   */
  def added(previous: Manifest, committed: Manifest, operation: OperationCase): Seq[DataFragment] = operation match {
    case OperationCase.REWRITE | OperationCase.MERGE | OperationCase.PROJECT => Nil
    case _ =>
      val before = previous.getFragmentsList.asScala.map(f => f.getId -> f.getFilesList).toMap
      committed.getFragmentsList.asScala.filterNot(f => before.get(f.getId).contains(f.getFilesList)).toSeq
  }
}
