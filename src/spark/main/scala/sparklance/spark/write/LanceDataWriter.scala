package sparklance.spark.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{DataWriter, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import sparklance.format.Resources
import sparklance.spark.Allocators

/** One task's rows, written into new data files. */
final class LanceDataWriter(target: WriteTarget, inputSchema: StructType, name: String) extends DataWriter[InternalRow] {
  private val allocator = Allocators.child(name)
  private val sink = Resources.closeOnFailure(Seq(allocator))(new FragmentSink(target, inputSchema.fields.map(_.dataType).toSeq, allocator))

  override def write(row: InternalRow): Unit = sink.append(row)

  override def commit(): WriterCommitMessage = { val written = sink.finish(); FragmentsMessage.of(written, sink.zones) }

  override def abort(): Unit = sink.abort()

  override def close(): Unit = Resources.closeAll(Seq(sink, allocator))
}
