package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.vectorized.ColumnarBatch

/** Opens a [[LanceColumnarReader]] per input partition; Lance scans are columnar only. */
final class LanceReaderFactory(target: ReadTarget) extends PartitionReaderFactory {
  override def supportColumnarReads(partition: InputPartition): Boolean = true

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] =
    new LanceColumnarReader(target, partition.asInstanceOf[LanceInputPartition])

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    throw new UnsupportedOperationException("Lance scans are columnar")
}
