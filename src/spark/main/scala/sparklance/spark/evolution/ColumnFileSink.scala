package sparklance.spark.evolution

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType
import sparklance.format.{LanceException, Resources}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFile
import sparklance.format.table.{FragmentWriter, LanceSchema, StorageVersion}
import sparklance.spark.write.ArrowRowWriter

/**
 * Writes one column-only data file of a fragment from Spark rows that arrive in row offset order:
 * the values of `schema`'s columns for each of the fragment's physical rows. Offsets no row
 * arrives for (deleted rows, which no reader sees) repeat a neighbour's values, as pylance does,
 * so that NOT NULL columns stay valid. Nothing references the file until a commit does; `abort`
 * removes it.
 */
final class ColumnFileSink(tableName: String, storage: Storage, tablePath: String, schema: LanceSchema,
    version: StorageVersion, physicalRows: Long, inputTypes: Seq[DataType], allocator: BufferAllocator) extends AutoCloseable {
  private val BatchRows = 8192
  private val BatchBytes = 16L << 20
  private val rows = new ArrowRowWriter(tableName, schema.fields, inputTypes, allocator)
  private val files = Resources.closeOnFailure(Seq(rows))(
    new FragmentWriter(storage, tablePath, schema, version, allocator, physicalRows, Seq(physicalRows)))
  private var filler: InternalRow = _
  private var next = 0L

  /** The values of the row at `offset` (above every offset given before). */
  def append(offset: Long, values: InternalRow): Unit = {
    if (offset < next || offset >= physicalRows) throw new LanceException(
      s"Column values of $tableName arrive for row offset $offset out of order or beyond the fragment's $physicalRows rows")
    if (filler == null) filler = values
    while (next < offset) put(filler)
    put(values)
    filler = values
  }

  private def put(values: InternalRow): Unit = {
    rows.append(values)
    next += 1
    if (rows.count >= BatchRows || rows.bufferedBytes >= BatchBytes) flush()
  }

  private def flush(): Unit = if (rows.count > 0) { files.write(rows.seal()); rows.reset() }

  def finish(): DataFile = {
    while (next < physicalRows) put(filler)
    flush()
    files.finish().head.getFiles(0)
  }

  def abort(): Unit = files.abort()

  def close(): Unit = Resources.closeAll(Seq(files, rows))
}
