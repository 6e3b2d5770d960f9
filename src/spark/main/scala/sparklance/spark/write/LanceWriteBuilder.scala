package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.types.StructType

/**
 * Append or overwrite (INSERT INTO / INSERT OVERWRITE / DataFrameWriterV2): `makeWrite` turns the
 * input schema and whether to overwrite into the batch write; `optimized` shapes its input.
 */
final class LanceWriteBuilder(info: LogicalWriteInfo, makeWrite: (StructType, Boolean) => BatchWrite,
    optimized: Option[OptimizedWrite])
    extends WriteBuilder with SupportsTruncate with SupportsDynamicOverwrite {
  private var overwrite = false
  override def truncate(): WriteBuilder = { overwrite = true; this }
  // Lance tables have no partitions, so a dynamic partition overwrite replaces everything.
  override def overwriteDynamicPartitions(): WriteBuilder = { overwrite = true; this }
  override def build(): LanceWrite = new LanceWrite(() => makeWrite(info.schema(), overwrite), overwrite, optimized)
}
