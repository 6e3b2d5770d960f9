package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory
import sparklance.format.TxnAlreadyAppliedException
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
 * column files), deleted with the job's if it fails. `identity`: the table's identity columns with
 * their high-water marks, which the tasks fill (see [[IdentityValues]]); `commitFragments` also gets
 * the furthest value the tasks wrote into each.
 */
final class LanceBatchWrite(target: WriteTarget, inputSchema: StructType, storage: Storage,
    staged: Seq[DataFragment], commitFragments: (Seq[DataFragment], WrittenZones, Map[String, Long]) => PostCommit,
    identity: Seq[(sparklance.spark.IdentityColumn, Option[Long])] = Nil) extends BatchWrite {

  private val uncommitted = new UncommittedFiles(storage, target.tablePath)

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
    new LanceDataWriterFactory(target, inputSchema, IdentityPlan(target.tableName, identity, info.numPartitions().max(1)))

  override def commit(messages: Array[WriterCommitMessage]): Unit = LanceErrors.converting {
    val reports = messages.toSeq.flatMap {
      case m: FragmentsMessage => Some(m)
      case null => None
      case other => throw new IllegalStateException(s"Unexpected commit message $other")
    }
    val fragments = reports.flatMap(_.decoded)
    val zones = reports.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _)
    // An idempotent write (txnAppId / txnVersion) the table already holds: skipped, its files deleted.
    val identityReached = identity.flatMap { case (c, _) =>
      reports.flatMap(_.identity.get(c.name)).reduceOption(c.furthest).map(c.name -> _)
    }.toMap
    try uncommitted.commit(fragments ++ staged)(commitFragments(fragments, zones, identityReached)).run()
    catch { case e: TxnAlreadyAppliedException => LanceBatchWrite.log.info(e.getMessage) }
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit =
    uncommitted.discard(messages.toSeq.collect { case m: FragmentsMessage => m.decoded }.flatten ++ staged)
}

object LanceBatchWrite {
  private val log = LoggerFactory.getLogger(getClass)
}
