package sparklance.spark.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{DataWriter, DataWriterFactory}
import org.apache.spark.sql.types.StructType

/** Creates each task's [[LanceDataWriter]] of an append or overwrite; `identity` fills identity columns. */
final class LanceDataWriterFactory(target: WriteTarget, inputSchema: StructType, identity: IdentityPlan = IdentityPlan.None)
    extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new LanceDataWriter(target, inputSchema, s"write-$partitionId-$taskId",
      if (identity.isEmpty) None else Some(identity.forTask(inputSchema, partitionId)))
}
