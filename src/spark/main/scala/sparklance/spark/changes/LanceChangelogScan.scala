package sparklance.spark.changes

import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.UnsupportedFeatureException
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.rowids.ChangedRows
import sparklance.format.table.Snapshot
import sparklance.spark.errors.LanceErrors
import sparklance.spark.scan.{ChangeSlice, FragmentSplit, LanceReaderFactory, LanceScan, ReadTarget, SplitPacking}

/**
 * Reads only the rows each commit changed: the driver finds them from row id and version
 * sequences and deletion files (no data is read to plan). A split reads the changed rows of one
 * fragment at the version that holds them (with that version's fields, where its schema is not
 * the end's: [[ChangeSchemas.fieldsAt]]), and splits are packed into input partitions as a
 * scan's are ([[SplitPacking]]). A batch reads the changelog's range; a stream
 * ([[LanceChangeStream]]) reads the commits of each micro-batch the same way.
 */
final class LanceChangelogScan(changelog: LanceChangelog, required: StructType, options: CaseInsensitiveStringMap)
    extends Scan with Batch {
  override def supportedCustomMetrics(): Array[org.apache.spark.sql.connector.metric.CustomMetric] =
    sparklance.spark.scan.ScanMetrics.supported

  override def readSchema(): StructType = required
  override def toBatch: Batch = this
  override def description(): String = changelog.name()
  override def columnarSupportMode(): Scan.ColumnarSupportMode = Scan.ColumnarSupportMode.SUPPORTED

  override def planInputPartitions(): Array[InputPartition] = LanceErrors.converting {
    val range = changelog.range
    pack(splits(range, (range.first to range.last).map { v =>
      val after = range.snapshot(v).get
      after -> CommitRows.of(changelog.dataset, range.snapshot(v - 1), after)
    }))
  }

  /**
   * The splits reading `changes`, each the rows of the commit that made its version (a version of
   * `range`), in the schema `range` serves.
   */
  private[changes] def splits(range: ChangeRange, changes: Seq[(Snapshot, Seq[ChangedRows])]): Seq[SplitPacking.Sized] = {
    // Rows of a version whose schema is not the end's are read with that version's fields.
    val fieldsAt = scala.collection.mutable.Map.empty[Long, Option[Array[Array[Byte]]]]
    def fieldsOf(version: Long) = fieldsAt.getOrElseUpdate(version,
      range.schemas.flatMap(_.fieldsAt(version, lanceFields)).map(ReadTarget.encode))
    changes.flatMap { case (at, rows) =>
      rows.map { c =>
        val (start, end) = FragmentSplit.span(c.rows)
        val slice = ChangeSlice(PortableBitmaps.toBytes(c.rows), PortableBitmaps.toBytes(c.updated), c.newSide, at.version,
          at.commitMicros, changelog.computeUpdates, fieldsOf(c.readAt))
        val bytes = c.rows.getLongCardinality * SplitPacking.rowBytes(c.fragment, changelog.end.schema, readColumns)
        SplitPacking.Sized(FragmentSplit(c.fragment.toByteArray, start, end, change = Some(slice)), bytes.toLong)
      }
    }
  }

  private[changes] def pack(splits: Seq[SplitPacking.Sized]): Array[InputPartition] =
    SplitPacking.pack(splits, SplitPacking.budget(splits.map(_.bytes).sum, splits.size))

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

  /** `STREAM t CHANGES`, `readStream.changes(t)` and `readStream.option("readChangeFeed", "true")`. */
  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = LanceErrors.converting {
    // Spark computes net changes of a stream with a stateful operator whose output differs from
    // the batch read's; refused rather than half-supported.
    if (changelog.netChanges) throw new UnsupportedFeatureException(s"A change-data stream of ${changelog.tableName} " +
      "cannot compute net changes (deduplicationMode 'netChanges'): a stream emits every change of each new commit. " +
      "Leave the option out, or read net changes of a range of versions in a batch query")
    new LanceChangeStream(this, changelog, options, checkpointLocation)
  }
}
