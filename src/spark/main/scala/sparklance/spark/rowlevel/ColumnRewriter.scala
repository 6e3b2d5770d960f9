package sparklance.spark.rowlevel

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{FragmentScanner, LanceSchema, ScanBatch}
import sparklance.spark.evolution.ColumnFileSink
import sparklance.spark.scan.SparkVectors
import sparklance.spark.write.WriteTarget

/**
 * Writes the new column file of a fragment whose rows are updated in place: updated rows arrive
 * in offset order with their new values (`update`); every other live row keeps its current value,
 * read from the fragment as the statement read it and merged in by offset. Only those rows are
 * decoded: the scanner skips each updated row. The result holds `fields` for all the fragment's
 * physical rows (see [[ColumnFileSink]]).
 */
final class ColumnRewriter(target: WriteTarget, fragment: DataFragment, fields: LanceSchema, types: Seq[DataType],
    allocator: BufferAllocator) extends AutoCloseable {
  private val storage = target.storage
  private val sink = new ColumnFileSink(target.tableName, storage, target.tablePath, fields, target.dataStorageVersion,
    fragment.getPhysicalRows, types, allocator)
  private val current = Resources.closeOnFailure(Seq(sink))(new FragmentScanner(storage, target.files, fragment,
    fields.fields, allocator, 0, fragment.getPhysicalRows))
  private var batch: ScanBatch = _
  private var adapted: Seq[AutoCloseable] = Nil
  private var rows: ColumnarBatch = _
  private var at = 0

  /** The new values of the row at `offset`, above every offset given before. */
  def update(offset: Long, values: InternalRow): Unit = {
    keepCurrentBelow(offset)
    current.skipTo(offset + 1)
    sink.append(offset, values)
  }

  /** The file, once every row is in. */
  def finish(): DataFile = {
    keepCurrentBelow(fragment.getPhysicalRows)
    sink.finish()
  }

  def abort(): Unit = sink.abort()

  /** Writes the current values of the live rows below `offset` that no update replaced. */
  private def keepCurrentBelow(offset: Long): Unit = {
    var done = false
    while (!done) {
      if (batch != null && at < batch.numRows && Integer.toUnsignedLong(batch.offsets(at)) < offset) {
        // The sink may hold on to a row between appends (to fill deleted offsets): give it a copy.
        sink.append(Integer.toUnsignedLong(batch.offsets(at)), rows.getRow(at).copy())
        at += 1
      } else if (batch != null && at < batch.numRows) done = true // the rest of the batch lies at or above `offset`
      else if (current.hasNext && current.nextOffset < offset) load(current.nextBelow(offset))
      else done = true
    }
  }

  private def load(next: ScanBatch): Unit = {
    release()
    batch = next
    at = 0
    val columns: Array[ColumnVector] = next.vectors.zip(types).map { case (v, t) =>
      val vec = SparkVectors.adapt(v, t, allocator)
      if (vec ne v) adapted :+= vec
      new ArrowColumnVector(vec)
    }.toArray
    rows = new ColumnarBatch(columns, next.numRows)
  }

  private def release(): Unit = {
    val (vectors, scanned) = (adapted, batch)
    adapted = Nil; batch = null; rows = null
    Resources.closeAll(vectors :+ scanned)
  }

  override def close(): Unit = Resources.closeAll(Seq[AutoCloseable](() => release(), current, sink))
}
