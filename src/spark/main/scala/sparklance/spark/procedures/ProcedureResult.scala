package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.types.StructType

/** What a procedure did, as the rows `CALL` returns (one row for sparklance's procedures). */
final class ProcedureResult(schema: StructType, result: Array[InternalRow]) extends LocalScan {
  override def rows(): Array[InternalRow] = result
  override def readSchema(): StructType = schema
  override def description(): String = s"procedure result ${schema.simpleString}"
}
