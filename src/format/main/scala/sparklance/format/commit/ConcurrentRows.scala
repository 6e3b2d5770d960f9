package sparklance.format.commit

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase

/** Rows one committed version brought into the table that a statement reading the version before never saw. */
object ConcurrentRows {
  /**
   * The fragments of `committed` that are new since `previous` or whose data files changed: rows
   * appended, rewritten by an UPDATE / MERGE, restored or overwritten, and column values replaced.
   * A compaction only moves rows, and Project drops columns without changing the values of the
   * others, so they bring in nothing a statement on the earlier columns could read. A Merge adds
   * columns to existing fragments, which changes no value a statement read; but a write that
   * lands with a schema change (an evolving append or MERGE, recorded as a Merge) also adds
   * fragments, and a Merge may replace a fragment's file: those count.
   */
  def added(previous: Manifest, committed: Manifest, operation: OperationCase): Seq[DataFragment] = {
    val before = previous.getFragmentsList.asScala.map(f => f.getId -> f.getFilesList.asScala.toSeq).toMap
    val fragments = committed.getFragmentsList.asScala.toSeq
    operation match {
      case OperationCase.REWRITE | OperationCase.PROJECT => Nil
      case OperationCase.MERGE =>
        fragments.filterNot(f => before.get(f.getId).exists(files => files.forall(f.getFilesList.asScala.toSet)))
      case _ => fragments.filterNot(f => before.get(f.getId).contains(f.getFilesList.asScala.toSeq))
    }
  }
}
