package sparklance.spark.write

import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.connector.write.streaming.StreamingWrite
import org.apache.spark.sql.types.StructType

/**
 * Append or overwrite (INSERT INTO / INSERT OVERWRITE / DataFrameWriterV2): `makeWrite` turns the
 * input schema and the [[WriteMode]] into the batch write, `makeStreaming` the [[WriteMode]] into a
 * streaming query's (append mode, or complete mode through `truncate`); `optimized` shapes its input.
 * Update mode is refused by Spark before any batch runs: this builder does not take it. Each task
 * sorts its rows by the table's `clustering` columns.
 */
final class LanceWriteBuilder(info: LogicalWriteInfo, makeWrite: (StructType, WriteMode) => BatchWrite,
    optimized: Option[OptimizedWrite], makeStreaming: Option[WriteMode => StreamingWrite] = None, clustering: Seq[String] = Nil)
    extends WriteBuilder with SupportsTruncate with SupportsDynamicOverwrite {
  private var mode: WriteMode = WriteMode.Append
  override def truncate(): WriteBuilder = { mode = WriteMode.Replace; this }
  override def overwriteDynamicPartitions(): WriteBuilder = { mode = WriteMode.ReplacePartitions; this }
  override def build(): LanceWrite = new LanceWrite(() => makeWrite(info.schema(), mode), makeStreaming.map(m => () => m(mode)), mode, optimized, clustering)
}
