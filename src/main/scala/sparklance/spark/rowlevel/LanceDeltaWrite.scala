package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write._
import scala.util.control.NonFatal
import sparklance.format.commit.{Committer, Operation, RowLevelChange}
import sparklance.format.table.UncommittedFiles
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.spark.{LanceTable, TableProperties}
import sparklance.spark.write.WriteTarget

/**
 * The write side of a row-level operation. Rows are clustered by fragment and sorted by address
 * so each task sees a fragment's deletions together; the clustering is not strict, so adaptive
 * execution may split large groups (such as the inserted rows, whose fragment is null).
 */
final class LanceDeltaWrite(table: LanceTable, command: RowLevelOperation.Command, info: LogicalWriteInfo)
    extends DeltaWrite with RequiresDistributionAndOrdering {

  @volatile private var driverMetrics = DmlMetrics.driver(0, 0)

  override def description(): String = s"lance ${command.toString.toLowerCase} ${table.tableName}"

  override def requiredDistribution(): Distribution =
    Distributions.clustered(Array[Expression](Expressions.column(LanceTable.FragmentId)))

  override def distributionStrictlyRequired(): Boolean = false

  override def requiredOrdering(): Array[SortOrder] =
    Array(Expressions.sort(Expressions.column(LanceTable.RowAddress), SortDirection.ASCENDING))

  override def supportedCustomMetrics(): Array[CustomMetric] = DmlMetrics.supported

  override def reportDriverMetrics(): Array[CustomTaskMetric] = driverMetrics

  override def toBatch: DeltaBatchWrite = new DeltaBatchWrite {
    private val snapshot = table.snapshot
    private val target = WriteTarget(table.tableName, table.dataset.path, snapshot.schema,
      snapshot.dataStorageVersion, TableProperties.maxRowsPerFile(snapshot), table.settings.storageConf)

    override def createBatchWriterFactory(physical: PhysicalWriteInfo): DeltaWriterFactory =
      new LanceDeltaWriterFactory(target, info.schema(),
        if (snapshot.stableRowIds) LanceDeltaWriterFactory.lineagePositions(info.metadataSchema().get()) else None)

    // Retried or speculative tasks must not both report deletions: Spark's coordinator admits one.
    override def useCommitCoordinator(): Boolean = true

    override def commit(messages: Array[WriterCommitMessage]): Unit = {
      val deltas = messages.toSeq.collect { case m: DeltaMessage => m }
      val fragments = deltas.flatMap(_.newFragments)
      try {
        val deleted = deltas.flatMap(_.deletedOffsets).groupMapReduce(_._1)(_._2) { (a, b) => a.or(b); a }
        if (deleted.isEmpty && fragments.isEmpty) return
        val op = RowLevelChange.build(table.dataset, snapshot, deleted, fragments,
          isDelete = command == RowLevelOperation.Command.DELETE, predicate = "")
        val isolation = TableProperties.isolation(snapshot, scala.jdk.CollectionConverters.MapHasAsScala(info.options()).asScala.toMap)
        new Committer(table.dataset, table.settings.commitRetries, isolation).commit(Some(snapshot), op)
        val deletionFiles = op match {
          case d: Operation.Delete => d.updated.size
          case u: Operation.Update => u.updated.size
          case _ => 0
        }
        driverMetrics = DmlMetrics.driver(deletionFiles, fragments.map(_.getFilesCount).sum)
      } catch { case NonFatal(e) => deleteFiles(fragments); throw e }
    }

    override def abort(messages: Array[WriterCommitMessage]): Unit =
      deleteFiles(messages.toSeq.collect { case m: DeltaMessage => m.newFragments }.flatten)

    private def deleteFiles(fragments: Seq[DataFragment]): Unit =
      UncommittedFiles.delete(table.dataset.storage, table.dataset.path, fragments)
  }
}
