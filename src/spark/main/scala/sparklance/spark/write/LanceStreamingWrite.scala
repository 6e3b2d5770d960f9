package sparklance.spark.write

import org.apache.spark.sql.connector.write.{DataWriter, LogicalWriteInfo, PhysicalWriteInfo, WriterCommitMessage}
import org.apache.spark.sql.connector.write.streaming.{StreamingDataWriterFactory, StreamingWrite}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory
import scala.jdk.CollectionConverters._
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.commit.{CommitRecord, Committer, Operation, ReadSet, RowCounts, Statement, TxnMarker}
import sparklance.format.skipping.WrittenZones
import sparklance.format.table.UncommittedFiles
import sparklance.spark.{LanceTable, TableProperties}
import sparklance.spark.errors.LanceErrors
import sparklance.spark.maintenance.{AutoMaintenance, PostCommit}

/**
 * A Structured Streaming sink's micro-batches (`writeStream ... toTable`), exactly once: each
 * non-empty batch commits one version whose transaction carries the query's persistent id and
 * the batch id ([[TxnMarker]]); a batch the table already holds (a restarted query re-running the
 * last batch of its offset log, whose commit landed before the checkpoint recorded it) is skipped
 * and its new files deleted. Append mode adds the batch's rows, complete mode (`mode` Replace)
 * replaces the table with them. Each commit builds on the latest version, not on the one the
 * table was loaded with. Append batches compact small fragments unless the table sets
 * `auto_compact` = false (see [[AutoMaintenance.afterCommit]]).
 */
final class LanceStreamingWrite(table: LanceTable, info: LogicalWriteInfo, mode: WriteMode) extends StreamingWrite {
  private val target = WriteTarget.of(table.tableName, table.snapshot, table.settings)
  // Each batch would need the high-water mark of the version it commits on, which its tasks do not know.
  table.identityColumns.headOption.foreach { c =>
    throw LanceErrors.convert(new sparklance.format.UnsupportedFeatureException(s"${table.tableName} has the identity column " +
      s"'${c.name}', whose values a streaming write does not generate; write the stream's batches with foreachBatch instead"))
  }
  private val inputSchema = info.schema()
  private val appId = info.queryId()
  private val options = info.options().asScala.toMap
  private val dataset = table.dataset
  // Per batch, shared by its commit and the abort Spark calls when the commit throws: after a
  // commit whose outcome is unknown (CommitStateUnknownException) the abort must keep the files.
  private val batches = new java.util.concurrent.ConcurrentHashMap[Long, UncommittedFiles]()
  private def uncommittedOf(epochId: Long): UncommittedFiles =
    batches.computeIfAbsent(epochId, _ => new UncommittedFiles(dataset.storage, dataset.path))

  // Spark checks CHECK constraints in batch writes only; a stream's rows would land unchecked.
  LanceErrors.converting {
    val checks = sparklance.spark.CheckConstraints.all(table.tableName, table.snapshot)
    if (checks.nonEmpty) throw new sparklance.format.UnsupportedFeatureException(s"Streaming writes into ${table.tableName} " +
      s"are refused: it has CHECK constraint(s) ${checks.map(c => s"${c.name()} (${c.predicateSql()})").mkString(", ")}, which " +
      "Spark does not check in streaming writes. Write each micro-batch with foreachBatch and writeTo(...).append(), which checks them")
  }

  // Checked as each batch is planned, so a query whose columns do not fit fails before it writes.
  private val columns = LanceErrors.converting {
    val conf = SparkSession.active.conf
    val caseSensitive = conf.get("spark.sql.caseSensitive", "false").toBoolean
    StreamColumns.of(table.tableName, table.sparkSchema, inputSchema,
      (a, b) => if (caseSensitive) a == b else a.equalsIgnoreCase(b), conf.get("spark.sql.session.timeZone"))
  }

  override def createStreamingWriterFactory(physical: PhysicalWriteInfo): StreamingDataWriterFactory =
    new LanceStreamingWriterFactory(new LanceDataWriterFactory(target, table.sparkSchema), columns)

  override def commit(epochId: Long, messages: Array[WriterCommitMessage]): Unit = LanceErrors.converting {
    val reports = messages.toSeq.collect { case m: FragmentsMessage => m }
    val fragments = reports.flatMap(_.decoded)
    val uncommitted = uncommittedOf(epochId)
    val marker = TxnMarker(appId, epochId, TxnMarker.Kind.Stream)
    val latest = dataset.snapshot(forWrite = true)
    val overwrite = mode.replaces(hasRows = fragments.nonEmpty)
    if (overwrite || fragments.nonEmpty) { // an empty append batch commits nothing
      val zones = reports.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _)
      val inserted = fragments.map(_.getPhysicalRows).sum
      val (op, record) =
        if (overwrite) (Operation.Overwrite(fragments, latest.schema),
          CommitRecord(Statement.StreamingComplete, Some(RowCounts(inserted, 0, latest.countRows(dataset.storage)))))
        else (Operation.Append(fragments), CommitRecord(Statement.StreamingAppend, Some(RowCounts.inserted(inserted))))
      val committed = try Some(uncommitted.commit(fragments) {
        new Committer(dataset, table.settings.commitRetries, TableProperties.isolation(latest, options)).commit(Some(latest), op,
          reads = Some(ReadSet.Blind), indexing = WriteTarget.zoneMaps(target, zones, fragments), record = Some(record),
          appTxn = Some(marker))
      }) catch {
        // The table holds the batch: a restarted query re-ran it, or another run of the query (a
        // zombie driver) landed it meanwhile. Skipped; the files this run wrote are deleted.
        case e: TxnAlreadyAppliedException =>
          LanceStreamingWrite.log.info(s"Batch $epochId of streaming query $appId: ${e.getMessage}")
          None
      }
      committed.foreach { c =>
        PostCommit(table.tableName, c.version)(
          AutoMaintenance.afterCommit(dataset, table.tableName, table.settings, latest, c, compact = !overwrite,
            compactByDefault = true)).run()
      }
    }
  }

  override def abort(epochId: Long, messages: Array[WriterCommitMessage]): Unit =
    uncommittedOf(epochId).discard(messages.toSeq.collect { case m: FragmentsMessage => m.decoded }.flatten)
}

object LanceStreamingWrite {
  private val log = LoggerFactory.getLogger(getClass)
}

/**
 * Each streaming task's writer: the batch write's, whatever the epoch (the driver's commit tells
 * batches apart), given the query's rows as rows of the table ([[StreamColumns]]).
 */
final class LanceStreamingWriterFactory(batch: LanceDataWriterFactory, columns: StreamColumns) extends StreamingDataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long, epochId: Long): DataWriter[InternalRow] = {
    val writer = batch.createWriter(partitionId, taskId)
    columns.projection.fold(writer) { _ =>
      val toTable = columns.rowsFor()
      new DataWriter[InternalRow] {
        override def write(row: InternalRow): Unit = writer.write(toTable(row))
        override def commit(): WriterCommitMessage = writer.commit()
        override def abort(): Unit = writer.abort()
        override def close(): Unit = writer.close()
      }
    }
  }
}
