package sparklance.spark.scan

import java.util.OptionalLong
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.Snapshot
import sparklance.spark.LanceTable

/** A columnar scan of one snapshot: one input partition per fragment, or per row range of a large fragment. */
class LanceScan(table: LanceTable, required: StructType, options: CaseInsensitiveStringMap)
    extends Scan with Batch with SupportsReportStatistics {

  protected val snapshot: Snapshot = table.snapshot

  /** The fragments this scan reads. */
  protected def fragments: Seq[DataFragment] = snapshot.fragments
  private val rowsPerSplit: Long = Option(options.get("split_rows")).map(_.toLong).getOrElse(LanceScan.DefaultSplitRows)

  override def readSchema(): StructType = required
  override def toBatch: Batch = this
  override def description(): String =
    s"LanceScan ${table.tableName} v${snapshot.version} [${required.fieldNames.mkString(", ")}]"

  override def columnarSupportMode(): Scan.ColumnarSupportMode = Scan.ColumnarSupportMode.SUPPORTED

  override def planInputPartitions(): Array[InputPartition] =
    fragments.filter(Snapshot.liveRows(_) > 0).flatMap { f =>
      val rows = f.getPhysicalRows
      (0L until rows by rowsPerSplit).map(start =>
        LanceInputPartition(f.toByteArray, start, math.min(rows, start + rowsPerSplit)): InputPartition)
    }.toArray

  override def createReaderFactory(): PartitionReaderFactory = {
    val dataFields = required.fields.filterNot(f => LanceTable.MetadataNames.contains(f.name))
    val lanceFields = dataFields.map(f => snapshot.schema.field(f.name).getOrElse(
      throw new IllegalStateException(s"Column ${f.name} is not in ${table.tableName}")))
    new LanceReaderFactory(ReadTarget(table.tableName, table.dataset.path, lanceFields.toSeq, required))
  }

  override def estimateStatistics(): Statistics = {
    val rows = snapshot.countRows
    val bytes = snapshot.fragments.flatMap(_.getFilesList.asScala).map(_.getFileSizeBytes).sum
    new Statistics {
      override def numRows(): OptionalLong = OptionalLong.of(rows)
      override def sizeInBytes(): OptionalLong = OptionalLong.of(math.max(bytes, 1L))
    }
  }
}

object LanceScan {
  val DefaultSplitRows: Long = 1L << 20
}
