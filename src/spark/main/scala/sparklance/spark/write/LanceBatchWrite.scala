package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.WrittenZones
import sparklance.format.table.{TailPacking, UncommittedFiles}
import sparklance.spark.Allocators
import sparklance.spark.maintenance.PostCommit
import sparklance.spark.errors.LanceErrors

/**
 * A batch write whose tasks write fragments; `commitFragments` (on the driver) decides what
 * the fragments become: an Append, an Overwrite, or the content of a staged CREATE / REPLACE,
 * given the zones the tasks gathered, and returns the work due once that commit landed, run after the files count as published.
 * `staged` are files written before the job for the same commit (a pending schema change's
 * column files), deleted with the job's if it fails. `identity`: the table's identity columns with
 * their high-water marks, which the tasks fill (see [[IdentityValues]]); `commitFragments` also gets
 * the furthest value the tasks wrote into each. `packTails` (an optimized write, see
 * [[OptimizedWrite]]): when the tasks left more fragments than ceil(rows / max_rows_per_file),
 * because each cut its own rows and left a partial fragment, the smallest of those are written
 * again into full ones before the commit, if that rewrites at most [[LanceBatchWrite.MaxPackedShare]]
 * of the rows (more means the tasks' input was too fine for packing to pay: Spark's shuffle sizes it).
 */
final class LanceBatchWrite(target: WriteTarget, inputSchema: StructType, storage: Storage,
    staged: Seq[DataFragment], commitFragments: (Seq[DataFragment], WrittenZones, Map[String, Long]) => PostCommit,
    identity: Seq[(sparklance.spark.IdentityColumn, Option[Long])] = Nil, packTails: Boolean = false) extends BatchWrite {

  /** This write, packing its tasks' partial fragments at commit. */
  def packingTails: LanceBatchWrite = new LanceBatchWrite(target, inputSchema, storage, staged, commitFragments, identity, packTails = true)

  private val uncommitted = new UncommittedFiles(storage, target.tablePath)

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
    new LanceDataWriterFactory(target, inputSchema, IdentityPlan(target.tableName, identity, info.numPartitions().max(1)))

  override def commit(messages: Array[WriterCommitMessage]): Unit = LanceErrors.converting {
    val reports = messages.toSeq.flatMap {
      case m: FragmentsMessage => Some(m)
      case null => None
      case other => throw new IllegalStateException(s"Unexpected commit message $other")
    }
    val (fragments, zones) = packed(reports.flatMap(_.decoded), reports.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _))
    // An idempotent write (txnAppId / txnVersion) the table already holds: skipped, its files deleted.
    val identityReached = identity.flatMap { case (c, _) =>
      reports.flatMap(_.identity.get(c.name)).reduceOption(c.furthest).map(c.name -> _)
    }.toMap
    try uncommitted.commit(fragments ++ staged)(commitFragments(fragments, zones, identityReached)).run()
    catch { case e: TxnAlreadyAppliedException => LanceBatchWrite.log.info(e.getMessage) }
  }

  private def packed(fragments: Seq[DataFragment], zones: WrittenZones): (Seq[DataFragment], WrittenZones) = {
    val rows = fragments.map(_.getPhysicalRows)
    val chosen = if (packTails && TailPacking.supports(target.schema)) TailPacking.plan(rows, target.maxRowsPerFile) else Nil
    if (chosen.isEmpty || chosen.map(rows).sum > LanceBatchWrite.MaxPackedShare * rows.sum) (fragments, zones)
    else {
      val tails = chosen.sorted.map(fragments)
      val allocator = Allocators.child(s"${target.tableName} tail packing")
      // A failure leaves the tasks' files to Spark's abort; the rewrite's own are deleted by its writer.
      val (repacked, repackedZones) = try TailPacking.rewrite(target.storage, target.files, target.schema,
        target.dataStorageVersion, allocator, target.maxRowsPerFile, target.zoneColumns, tails) finally allocator.close()
      uncommitted.discard(tails)
      val rewritten = chosen.toSet
      (fragments.indices.filterNot(rewritten).map(fragments) ++ repacked, zones ++ repackedZones)
    }
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit =
    uncommitted.discard(messages.toSeq.collect { case m: FragmentsMessage => m.decoded }.flatten ++ staged)
}

object LanceBatchWrite {
  /** The largest share of a write's rows that packing its tails may write again. */
  val MaxPackedShare = 0.5
  private val log = LoggerFactory.getLogger(getClass)
}
