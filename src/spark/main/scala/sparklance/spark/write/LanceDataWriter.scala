package sparklance.spark.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{DataWriter, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import sparklance.format.Resources
import sparklance.spark.Allocators
import sparklance.spark.errors.LanceErrors

/** One task's rows, written into new data files, their identity columns filled by `identity`. */
final class LanceDataWriter(target: WriteTarget, inputSchema: StructType, name: String, identity: Option[IdentityValues] = None)
    extends DataWriter[InternalRow] {
  private val allocator = Allocators.child(name)
  private val sink = Resources.closeOnFailure(Seq(allocator))(new FragmentSink(target, inputSchema.fields.map(_.dataType).toSeq, allocator))

  // Without LanceErrors.converting's closure, which a call per row would allocate.
  private val identityValues = identity.orNull

  override def write(row: InternalRow): Unit =
    try sink.append(if (identityValues == null) row else identityValues.fill(row)) catch { case e: Exception => throw LanceErrors.convert(e) }

  override def commit(): WriterCommitMessage = LanceErrors.converting {
    val written = sink.finish()
    FragmentsMessage.of(written, sink.zones, identity.fold(Map.empty[String, Long])(_.furthest))
  }

  override def abort(): Unit = sink.abort()

  override def close(): Unit = Resources.closeAll(Seq(sink, allocator))
}
