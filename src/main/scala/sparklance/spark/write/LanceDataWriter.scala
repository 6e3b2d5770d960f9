package sparklance.spark.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{DataWriter, DataWriterFactory, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import sparklance.format.table.FragmentWriter
import sparklance.spark.Allocators

final class LanceDataWriterFactory(target: WriteTarget, inputSchema: StructType) extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new LanceDataWriter(target, inputSchema, s"write-$partitionId-$taskId")
}

/** Buffers rows into Arrow batches and streams them into new data files. */
final class LanceDataWriter(target: WriteTarget, inputSchema: StructType, name: String) extends DataWriter[InternalRow] {
  private val BatchRows = 8192
  private val BatchBytes = 16L << 20

  private val allocator = Allocators.child(name)
  private val schema = target.schema
  private val rows = new ArrowRowWriter(target.tableName, schema.fields, inputSchema.fields.map(_.dataType).toSeq, allocator)
  private val files = new FragmentWriter(target.storage, target.tablePath, schema, target.dataStorageVersion, allocator,
    target.maxRowsPerFile)

  override def write(row: InternalRow): Unit = {
    rows.append(row)
    if (rows.count >= BatchRows || (rows.count % 1024 == 0 && rows.bufferedBytes >= BatchBytes)) flush()
  }

  private def flush(): Unit = if (rows.count > 0) {
    files.write(rows.seal())
    rows.reset()
  }

  override def commit(): WriterCommitMessage = {
    flush()
    FragmentsMessage.of(files.finish())
  }

  override def abort(): Unit = files.abort()

  override def close(): Unit = {
    files.close()
    rows.close()
    allocator.close()
  }
}
