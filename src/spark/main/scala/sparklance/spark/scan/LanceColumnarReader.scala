package sparklance.spark.scan

import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader
import org.apache.spark.sql.vectorized.ColumnarBatch
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.spark.Allocators
import sparklance.spark.errors.LanceErrors

/**
 * Reads an input partition's splits one after the other, in order, each with a
 * [[FragmentSplitReader]] opened when the one before it is done; stops after the partition's
 * `limit` rows.
 */
final class LanceColumnarReader(target: ReadTarget, partition: LanceInputPartition) extends PartitionReader[ColumnarBatch] {
  private val allocator = {
    val first = partition.splits.head
    Allocators.child(s"scan-${DataFragment.parseFrom(first.fragment).getId}-${first.start}")
  }
  private val splits = partition.splits.iterator
  private var reader: FragmentSplitReader = _
  private var bytesOfDoneSplits = 0L
  private var splitsOpened = 0L
  private var remaining: Long = partition.limit.fold(Long.MaxValue)(_.toLong)

  // A task's error reaches the driver as the cause of the job's failure: in Spark's framework too.
  override def next(): Boolean = LanceErrors.converting(advance())

  private def advance(): Boolean = {
    while (remaining > 0) {
      if (reader == null) {
        if (!splits.hasNext) return false
        reader = new FragmentSplitReader(target, splits.next(), allocator)
        splitsOpened += 1
      }
      if (reader.next()) {
        remaining -= reader.get().numRows()
        return true
      }
      closeSplit()
    }
    false
  }

  override def get(): ColumnarBatch = reader.get()

  override def currentMetricsValues(): Array[CustomTaskMetric] =
    ScanMetrics.task(bytesOfDoneSplits + Option(reader).fold(0L)(_.bytesRead), splitsOpened)

  private def closeSplit(): Unit = {
    val done = reader
    reader = null
    bytesOfDoneSplits += done.bytesRead
    done.close()
  }

  override def close(): Unit =
    Resources.closeAll(Seq[AutoCloseable](() => if (reader != null) closeSplit(), allocator))
}
