package sparklance.spark.changes

import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.StructType
import sparklance.format.commit.Transactions
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.rowids.CommitChanges
import sparklance.spark.scan.{ChangeSlice, FragmentSplit, LanceReaderFactory, LanceScan, ReadTarget, SplitPacking}

/**
 * Reads only the rows each commit changed: the driver finds them from row id and version
 * sequences and deletion files (no data is read to plan). A split reads the changed rows of one
 * fragment at the version that holds them (with that version's fields, where its schema is not
 * the end's: [[ChangeSchemas.fieldsAt]]), and splits are packed into input partitions as a
 * scan's are ([[SplitPacking]]).
 */
final class LanceChangelogScan(changelog: LanceChangelog, required: StructType) extends Scan with Batch {
  override def supportedCustomMetrics(): Array[org.apache.spark.sql.connector.metric.CustomMetric] =
    sparklance.spark.scan.ScanMetrics.supported

  override def readSchema(): StructType = required
  override def toBatch: Batch = this
  override def description(): String = changelog.name()
  override def columnarSupportMode(): Scan.ColumnarSupportMode = Scan.ColumnarSupportMode.SUPPORTED

  override def planInputPartitions(): Array[InputPartition] = {
    val dataset = changelog.dataset
    val range = changelog.range
    // Rows of a version whose schema is not the end's are read with that version's fields.
    val fieldsAt = scala.collection.mutable.Map.empty[Long, Option[Array[Array[Byte]]]]
    def fieldsOf(version: Long) = fieldsAt.getOrElseUpdate(version,
      range.schemas.flatMap(_.fieldsAt(version, lanceFields)).map(ReadTarget.encode))
    val splits = (range.first to range.last).flatMap { v =>
      val after = range.snapshot(v).get
      val before = range.snapshot(v - 1)
      val micros = after.commitMicros
      // A restore brings rows back with their old versions: its changes are a diff of the two versions.
      val restore = before.isDefined && Transactions.committed(dataset, v, Some(after.naming))
        .exists(_.getOperationCase == Transaction.OperationCase.RESTORE)
      val changes = if (restore) CommitChanges.ofRestore(dataset.storage, before.get, after)
        else CommitChanges.of(dataset.storage, before, after)
      changes.map { c =>
        val (start, end) = FragmentSplit.span(c.rows)
        val slice = ChangeSlice(PortableBitmaps.toBytes(c.rows), PortableBitmaps.toBytes(c.updated), c.newSide, v, micros,
          changelog.computeUpdates, fieldsOf(c.readAt))
        val bytes = c.rows.getLongCardinality * SplitPacking.rowBytes(c.fragment, changelog.end.schema, readColumns)
        SplitPacking.Sized(FragmentSplit(c.fragment.toByteArray, start, end, change = Some(slice)), bytes.toLong)
      }
    }
    SplitPacking.pack(splits, SplitPacking.budget(splits.map(_.bytes).sum, splits.size))
  }

  private lazy val readColumns: Set[String] = required.fieldNames.filter(changelog.dataSchema.fieldNames.contains).toSet

  /** The end's fields read, pruned to the columns (and nested fields) asked for. */
  private lazy val lanceFields: Seq[sparklance.format.table.LanceField] = {
    val dataFields = required.fields.filter(f => changelog.dataSchema.fieldNames.contains(f.name))
    dataFields.map(f => LanceScan.prune(changelog.end.schema.field(f.name).get, f.dataType)).toSeq
  }

  override def createReaderFactory(): PartitionReaderFactory = {
    sparklance.spark.UnsupportedColumnException.refuseReads(changelog.tableName, changelog.dataSchema, required)
    new LanceReaderFactory(ReadTarget(changelog.tableName, changelog.end.files, lanceFields, required,
      changelog.settings.storageConf, changelog.settings.readBatchBytes))
  }
}
