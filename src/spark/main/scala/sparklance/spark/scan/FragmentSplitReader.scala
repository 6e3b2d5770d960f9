package sparklance.spark.scan

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector
import org.apache.spark.sql.types.{DataType, IntegerType, LongType, NullType, StringType, TimestampType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.Resources
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{FragmentScanner, ScanBatch}
import sparklance.spark.LanceTable
import sparklance.spark.changes.LanceChangelog

/**
 * Decodes one split (a fragment's row range) into ColumnarBatches: columns Spark reads straight
 * from the decoded Arrow vectors' memory where it can ([[ArrowColumns]]), else through Spark's
 * ArrowColumnVector; metadata columns (_rowaddr, _fragid) are filled from the physical offsets of the live
 * rows; lineage columns from the fragment's row id and version sequences. A batch stays valid
 * until the next call of `next`.
 */
final class FragmentSplitReader(target: ReadTarget, split: FragmentSplit, allocator: BufferAllocator) extends AutoCloseable {
  private val fragment = DataFragment.parseFrom(split.fragment)
  private val change = split.change
  private val fields = change.flatMap(_.fields).fold(target.fields)(ReadTarget.decode)
  private val changedRows = change.map(c => PortableBitmaps.fromBytes(c.rows))
  private var prefilterBytes = 0L
  private val within = split.within.map(PortableBitmaps.fromBytes)
  // A row-level statement's condition, evaluated first on its own columns, narrows the rows read.
  private val kept = target.prefilter.flatMap(p =>
    Prefilter.rows(p, target, fragment, split.start, split.end, within, allocator, prefilterBytes += _))
  // The fields holding the keys of the scan's key sets (a scan sets them on the columns it reads).
  private val keyFields = target.keyFilters.map(f => f -> fields.indexWhere(_.name == f.column)).filter(_._2 >= 0)
  // A MERGE's key sets, tested first on the key columns alone, narrow the rows read further.
  private val keyKept = Option.when(keyFields.nonEmpty)(keyFields.map { case (f, index) => f -> fields(index) }).flatMap(filters =>
    KeySetFilter.rows(filters, target, fragment, split.start, split.end, kept.orElse(within), allocator, prefilterBytes += _))
  private val scanner = new FragmentScanner(target.storage, target.files,
    fragment, fields, allocator, split.start, split.end, only = changedRows,
    batchBytes = target.batchBytes, within = keyKept.orElse(kept).orElse(within))
  private lazy val updateImages = change.map(c => PortableBitmaps.fromBytes(c.updated))
  /** Whether every changed row is an update image (Some(true)) or none is (Some(false)): one change type for the split. */
  private lazy val uniformImages: Option[Boolean] = updateImages.flatMap { images =>
    if (images.isEmpty) Some(false) else Option.when(images.getLongCardinality == changedRows.get.getLongCardinality)(true)
  }
  private var current: ScanBatch = _
  private var adapted: Seq[AutoCloseable] = Nil
  private var batch: ColumnarBatch = _

  /** Decodes the next batch; false once the split has no more rows. */
  def next(): Boolean = {
    release()
    current = nextKept()
    if (current == null) return false
    val byName = fields.map(_.name).zip(current.vectors).toMap
    val n = current.numRows
    val columns: Array[ColumnVector] = target.readSchema.fields.map { f =>
      f.name match {
        case LanceTable.RowAddress => addresses()
        case LanceTable.FragmentId =>
          val v = new OnHeapColumnVector(n, IntegerType)
          v.putInts(0, n, fragment.getId.toInt)
          adapted :+= v; v
        // Without stable row ids a row's id is its address.
        case LanceTable.RowId => rowIds.fold(addresses())(l => perRow(Some(l.idAt _), _ => 0L))
        case LanceTable.CreatedAtVersion => perRow(createdAt.map(l => l.versionAt _), _ => FragmentSplitReader.UntrackedVersion)
        case LanceTable.LastUpdatedAtVersion => perRow(lastUpdatedAt.map(l => l.versionAt _), _ => FragmentSplitReader.UntrackedVersion)
        case LanceChangelog.ChangeType if change.isDefined =>
          val slice = change.get
          uniformImages match {
            case Some(image) =>
              val v = new ConstantColumnVector(n, StringType)
              v.setUtf8String(UTF8String.fromString(slice.changeType(image)))
              adapted :+= v; v
            case None =>
              val v = new OnHeapColumnVector(n, StringType)
              val (updateType, otherType) = (slice.changeType(true).getBytes(UTF_8), slice.changeType(false).getBytes(UTF_8))
              var i = 0
              while (i < n) { v.putByteArray(i, if (updateImages.get.contains(current.offsets(i))) updateType else otherType); i += 1 }
              adapted :+= v; v
          }
        case LanceChangelog.CommitVersion if change.isDefined => constant(change.get.commitVersion, LongType)
        case LanceChangelog.CommitTimestamp if change.isDefined => constant(change.get.commitMicros, TimestampType)
        // A column of an unmappable type that a row-level statement carries along unread (see LanceScan).
        case name if !byName.contains(name) && f.dataType == NullType =>
          val v = new ConstantColumnVector(n, NullType)
          v.setNull()
          adapted :+= v; v
        // Read in place where Spark's values are the vector's (see ArrowColumns), else converted first.
        case name => FragmentSplitReader.sparkColumn(byName(name), f.dataType, allocator, adapted :+= _)
      }
    }
    batch = new ColumnarBatch(columns, n)
    true
  }

  def get(): ColumnarBatch = batch

  /**
   * The next batch of rows the scan's key sets keep, skipping batches where they keep none; null at
   * the split's end. Where `keyKept` chose the rows, every row the scanner reads is kept already.
   */
  private def nextKept(): ScanBatch = {
    val testKeys = if (keyKept.isDefined) Nil else keyFields
    while (scanner.hasNext) {
      val kept = testKeys.foldLeft(Option(scanner.next())) { case (rows, (f, index)) => rows.flatMap(f.select(_, index, allocator)) }
      if (kept.isDefined) return kept.get
    }
    null
  }

  /** Bytes read from data files so far. */
  def bytesRead: Long = prefilterBytes + scanner.bytesRead

  // Lineage is looked up by offset (never expanded to one entry per row), and only if a lineage column is read.
  private lazy val rowIds = RowLineage.rowIdLookup(target.storage, target.tablePath, fragment)
  private lazy val createdAt = RowLineage.createdAtLookup(target.storage, target.tablePath, fragment)
  private lazy val lastUpdatedAt = RowLineage.lastUpdatedAtLookup(target.storage, target.tablePath, fragment)

  private def constant(value: Long, dataType: DataType): ColumnVector = {
    val v = new OnHeapColumnVector(current.numRows, dataType)
    v.putLongs(0, current.numRows, value)
    adapted :+= v
    v
  }

  /**
   * A long column with one value per live row, by physical offset; `absent(offset)` when the
   * fragment has no such lineage.
   */
  private def perRow(values: Option[Int => Long], absent: Int => Long): ColumnVector = {
    val n = current.numRows
    val v = new OnHeapColumnVector(n, LongType)
    val valueAt = values.getOrElse(absent)
    var i = 0
    while (i < n) { v.putLong(i, valueAt(current.offsets(i))); i += 1 }
    adapted :+= v
    v
  }

  /** The batch's row addresses, filled in one pass (a row-level statement reads them from every row). */
  private def addresses(): ColumnVector = {
    val v = new OnHeapColumnVector(current.numRows, LongType)
    current.foreachAddress(fragment.getId)((row, address) => v.putLong(row, address))
    adapted :+= v
    v
  }

  private def release(): Unit = {
    val (vectors, scanned) = (adapted, current)
    adapted = Nil; current = null; batch = null
    Resources.closeAll(vectors :+ scanned)
  }

  override def close(): Unit = Resources.closeAll(Seq[AutoCloseable](() => release(), scanner))
}

object FragmentSplitReader {
  /**
   * A decoded column as Spark reads it: in place where Spark's values are the vector's (see
   * [[ArrowColumns]]), else converted first; `keep` is handed a converted copy to close with the batch.
   */
  def sparkColumn(raw: FieldVector, dataType: DataType, allocator: BufferAllocator, keep: AutoCloseable => Unit): ColumnVector =
    ArrowColumns.of(raw, dataType).getOrElse {
      val vec = SparkVectors.adapt(raw, dataType, allocator)
      if (vec ne raw) keep(vec)
      ArrowColumns.of(vec, dataType).getOrElse(new ArrowColumnVector(vec))
    }

  /**
   * The version Lance reports for rows of fragments written without version sequences (tables
   * without stable row ids, or written by Lance releases before them): the table's first version.
   */
  val UntrackedVersion = 1L
}
