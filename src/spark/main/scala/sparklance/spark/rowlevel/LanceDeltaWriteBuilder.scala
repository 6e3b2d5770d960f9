package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.write.{DeltaWriteBuilder, LogicalWriteInfo, RowLevelOperation}
import sparklance.spark.LanceTable

/** Builds the write side of a DELETE / UPDATE / MERGE. */
final class LanceDeltaWriteBuilder(table: LanceTable, command: RowLevelOperation.Command, info: LogicalWriteInfo,
    outerJoined: Boolean)
    extends DeltaWriteBuilder {
  override def build(): LanceDeltaWrite = new LanceDeltaWrite(table, command, info, outerJoined)
}
