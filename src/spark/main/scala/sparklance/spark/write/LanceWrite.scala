package sparklance.spark.write

import org.apache.spark.sql.connector.write.{BatchWrite, Write}

/** The logical write of an append or overwrite; `batch` builds its [[LanceBatchWrite]]. */
final class LanceWrite(batch: () => BatchWrite, overwrite: Boolean) extends Write {
  override def description(): String = if (overwrite) "lance overwrite" else "lance append"
  override def toBatch: BatchWrite = batch()
}
