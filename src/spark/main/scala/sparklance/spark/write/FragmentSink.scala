package sparklance.spark.write

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.WrittenZones
import sparklance.format.table.FragmentWriter

/**
 * Rows in, fragments out: buffers Spark rows into Arrow batches (by count, or by bytes for wide
 * rows, checked after every row so that a few huge values never pile up) and streams them into
 * new data files, in arrival order, gathering the zones of the target's zone map columns.
 */
final class FragmentSink(target: WriteTarget, inputTypes: Seq[DataType], allocator: BufferAllocator) extends AutoCloseable {
  private val BatchRows = 8192
  private val BatchBytes = 16L << 20

  private val schema = target.schema
  private val rows = new ArrowRowWriter(target.tableName, schema.fields, inputTypes, allocator)
  private val files = Resources.closeOnFailure(Seq(rows))(new FragmentWriter(target.storage, target.tablePath, schema,
    target.dataStorageVersion, allocator, target.maxRowsPerFile, zoneColumns = target.zoneColumns))
  private var written = 0L

  def append(row: InternalRow): Unit = {
    rows.append(row)
    written += 1
    if (rows.count >= BatchRows || rows.bufferedBytes >= BatchBytes) flush()
  }

  /** Rows appended so far. */
  def count: Long = written

  private def flush(): Unit = if (rows.count > 0) {
    files.write(rows.seal())
    rows.reset()
  }

  /** The fragments holding every appended row, in order. */
  def finish(): Seq[DataFragment] = { flush(); files.finish() }

  /** The zones of the target's zone map columns in the fragments [[finish]] returned. */
  def zones: WrittenZones = files.zones

  def abort(): Unit = files.abort()

  def close(): Unit = Resources.closeAll(Seq(files, rows))
}
