package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types.StructType

/**
 * Append or overwrite (INSERT INTO / INSERT OVERWRITE / DataFrameWriterV2): `makeWrite` turns the
 * input schema and the [[WriteMode]] into the batch write; `optimized` shapes its input.
 */
final class LanceWriteBuilder(info: LogicalWriteInfo, makeWrite: (StructType, WriteMode) => BatchWrite,
    optimized: Option[OptimizedWrite])
    extends WriteBuilder with SupportsTruncate with SupportsDynamicOverwrite {
  private var mode: WriteMode = WriteMode.Append
  override def truncate(): WriteBuilder = { mode = WriteMode.Replace; this }
  override def overwriteDynamicPartitions(): WriteBuilder = { mode = WriteMode.ReplacePartitions; this }
  override def build(): LanceWrite = new LanceWrite(() => makeWrite(info.schema(), mode), mode, optimized)
}
