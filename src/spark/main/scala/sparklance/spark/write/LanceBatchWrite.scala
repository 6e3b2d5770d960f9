package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types.StructType
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.WrittenZones
import sparklance.format.table.UncommittedFiles
import sparklance.spark.maintenance.PostCommit
import sparklance.spark.errors.LanceErrors

/**
 * A batch write whose tasks write fragments; `commitFragments` (on the driver) decides what
 * the fragments become: an Append, an Overwrite, or the content of a staged CREATE / REPLACE,
 * given the zones the tasks gathered, and returns the work due once that commit landed, run after the files count as published.
 * `staged` are files written before the job for the same commit (a pending schema change's
 * column files), deleted with the job's if it fails.
 */
final class LanceBatchWrite(target: WriteTarget, inputSchema: StructType, storage: Storage,
    staged: Seq[DataFragment], commitFragments: (Seq[DataFragment], WrittenZones) => PostCommit) extends BatchWrite {

  private val uncommitted = new UncommittedFiles(storage, target.tablePath)

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
    new LanceDataWriterFactory(target, inputSchema)

  override def commit(messages: Array[WriterCommitMessage]): Unit = LanceErrors.converting {
    val reports = messages.toSeq.flatMap {
      case m: FragmentsMessage => Some(m)
      case null => None
      case other => throw new IllegalStateException(s"Unexpected commit message $other")
    }
    val fragments = reports.flatMap(_.decoded)
    val zones = reports.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _)
    uncommitted.commit(fragments ++ staged)(commitFragments(fragments, zones)).run()
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit =
    uncommitted.discard(messages.toSeq.collect { case m: FragmentsMessage => m.decoded }.flatten ++ staged)
}
