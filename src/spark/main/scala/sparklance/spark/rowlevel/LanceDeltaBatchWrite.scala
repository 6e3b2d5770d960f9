package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.write._
import scala.jdk.CollectionConverters._
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.commit.{CommitRecord, ReadSet, RowCounts, RowLevelCommit, Statement}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.UncommittedFiles
import sparklance.spark.{IdentityColumns, IdentityViolationException, LanceTable, TableProperties}
import sparklance.format.skipping.WrittenZones
import sparklance.spark.maintenance.{AutoMaintenance, PostCommit}
import sparklance.spark.scan.StatementReads
import sparklance.spark.write.{IdentityPlan, TxnOptions, WriteTarget}
import sparklance.spark.errors.LanceErrors

/**
 * Runs a DELETE / UPDATE / MERGE: tasks tombstone rows and write new ones, then the driver turns
 * their messages into one Delete or Update commit on the version the statement read. Under
 * serializable isolation that commit fails if other writers meanwhile committed rows the
 * statement's scans could have returned (the scans' pushed predicates, see StatementReads).
 * `reportFiles(deletionFiles, dataFiles)` receives what the commit wrote, for the UI.
 */
final class LanceDeltaBatchWrite(table: LanceTable, command: RowLevelOperation.Command, info: LogicalWriteInfo,
    inPlace: Option[InPlaceUpdates], reportFiles: (Long, Long) => Unit) extends DeltaBatchWrite {
  private val snapshot = table.snapshot
  private val target = WriteTarget.of(table.tableName, snapshot, table.settings)
  private val uncommitted = new UncommittedFiles(table.dataset.storage, table.dataset.path)
  // An idempotent statement (the session's spark.sparklance.txnAppId / txnVersion, read when planned).
  private val marker = LanceErrors.converting(TxnOptions.ofSession)

  // An UPDATE (or a MERGE's update) may not assign a GENERATED ALWAYS identity column; the
  // assignments are known with sparklance's session extension (see AssignedColumnsRule).
  for (assigned <- table.assignments; c <- table.identityColumns if c.always && assigned.changed.exists(_.equalsIgnoreCase(c.name)))
    throw LanceErrors.convert(new IdentityViolationException(table.tableName, c.name,
      "the column is GENERATED ALWAYS AS IDENTITY, and the statement updates it; its values cannot change"))

  // What inserted rows' identity values go beyond; a DELETE inserts none.
  private lazy val marks = if (command == RowLevelOperation.Command.DELETE) Nil else table.identityMarks

  override def createBatchWriterFactory(physical: PhysicalWriteInfo): DeltaWriterFactory =
    new LanceDeltaWriterFactory(target, info.schema(),
      if (snapshot.stableRowIds) LanceDeltaWriterFactory.lineagePositions(info.metadataSchema().get()) else None, inPlace,
      IdentityPlan(table.tableName, marks, physical.numPartitions().max(1)))

  // Retried or speculative tasks must not both report deletions: Spark's coordinator admits one.
  override def useCommitCoordinator(): Boolean = true

  override def commit(messages: Array[WriterCommitMessage]): Unit = LanceErrors.converting {
    val deltas = messages.toSeq.collect { case m: DeltaMessage => m }
    val fragments = deltas.flatMap(_.newFragments)
    val columnFiles = deltas.flatMap(_.columnFiles)
    // Column files are files of no fragment until the commit lands; on failure they go with the rest.
    val staged = table.pending.toSeq.flatMap(_.stagedFragments) ++ columnFiles.map(c => DataFragment.newBuilder().addFiles(c._2._1).build())
    val committed = try uncommitted.commit(fragments ++ staged) {
      // With a pending schema change the statement's rows and the change land in one commit.
      val change = new RowLevelCommit(table.dataset, table.pending.fold(snapshot)(_.base), table.pending).add(fragments)
      for (delta <- deltas; (fragmentId, offsets) <- delta.deletedOffsets) change.delete(fragmentId, offsets)
      for (plan <- inPlace; (fragmentId, (file, rows)) <- columnFiles) change.updateInPlace(plan.fieldIds, fragmentId, file, rows)
      // A row-level statement always scanned its target; no scan of it found means an unknown one.
      val reads = StatementReads.readSet(table, StatementReads.of(table)) match {
        case ReadSet.Blind => ReadSet.Everything
        case found => found
      }
      val kind = if (command == RowLevelOperation.Command.DELETE) RowLevelCommit.Kind.Delete else RowLevelCommit.Kind.Update
      val indexing = WriteTarget.zoneMaps(target, deltas.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _), fragments)
      // The rows the statement counted, recorded with its commit: Spark returns nothing from a
      // DSv2 DELETE / UPDATE / MERGE (its write nodes have no output), so history carries them.
      val counts = deltas.map(d => RowCounts(d.insertedRows, d.updatedRows, d.deletedRows)).foldLeft(RowCounts.None)(_ + _)
      change.commit(kind, TableProperties.isolation(snapshot, info.options().asScala.toMap), Some(reads),
        table.settings.commitRetries, indexing = indexing,
        record = Some(CommitRecord(LanceDeltaBatchWrite.statement(command), Some(counts))), appTxn = marker,
        claim = IdentityColumns.claim(snapshot, marks, table.identityColumns.flatMap { c =>
          deltas.flatMap(_.identity.get(c.name)).reduceOption(c.furthest).map(c.name -> _)
        }.toMap))
    } catch {
      // The table already holds this transaction of the application: skipped, its files deleted.
      case e: TxnAlreadyAppliedException => LanceDeltaBatchWrite.log.info(e.getMessage); None
    }
    committed.foreach { r =>
      reportFiles(r.deletionFilesWritten, r.dataFilesWritten)
      PostCommit(table.tableName, r.version)(
        AutoMaintenance.afterCommit(table.dataset, table.tableName, table.settings, snapshot, r.commit)).run()
    }
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit =
    uncommitted.discard(messages.toSeq.collect { case m: DeltaMessage => m.newFragments ++
      m.columnFiles.values.map(c => DataFragment.newBuilder().addFiles(c._1).build()) }.flatten ++
      table.pending.toSeq.flatMap(_.stagedFragments))
}

object LanceDeltaBatchWrite {
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  def statement(command: RowLevelOperation.Command): Statement = command match {
    case RowLevelOperation.Command.DELETE => Statement.Delete
    case RowLevelOperation.Command.UPDATE => Statement.Update
    case RowLevelOperation.Command.MERGE => Statement.Merge
  }
}
