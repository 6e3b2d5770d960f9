package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.write.{RowLevelOperation, RowLevelOperationBuilder}
import sparklance.spark.LanceTable

/** Starts a DELETE / UPDATE / MERGE on a table; every one runs as a merge-on-read delta. */
final class LanceRowLevelOperationBuilder(table: LanceTable, command: RowLevelOperation.Command)
    extends RowLevelOperationBuilder {
  override def build(): LanceDeltaOperation = new LanceDeltaOperation(table, command)
}
