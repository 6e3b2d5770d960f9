package sparklance.spark.scan

import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.vectorized.ColumnarBatch
import scala.util.control.NonFatal
import sparklance.format.Resources
import sparklance.format.io.Background
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.spark.Allocators
import sparklance.spark.errors.LanceErrors

/**
 * Reads an input partition's splits one after the other, in order, each with a
 * [[FragmentSplitReader]]; stops after the partition's `limit` rows. Where the table's store is
 * an object store, a split opens (its files' tails and deletion file read, its first pages
 * fetched, a statement's key sets tested on its keys) on a fetching thread while the split before
 * it opens and is read, so that a task waits out the store's latency once rather than once per split
 * ([[sparklance.format.io.Storage.inBackground]]); elsewhere a split opens when the one before it is done.
 */
final class LanceColumnarReader(target: ReadTarget, partition: LanceInputPartition) extends PartitionReader[ColumnarBatch] {
  private val allocator = {
    val first = partition.splits.head
    Allocators.child(s"scan-${DataFragment.parseFrom(first.fragment).getId}-${first.start}")
  }
  private val splits = partition.splits.iterator
  private var reader: FragmentSplitReader = _
  private var upcoming = Option.empty[Background[FragmentSplitReader]]
  // The task's settings, which the evaluation of a statement's condition may read, go with the opening to its thread.
  private val conf = SQLConf.get
  private var bytesOfDoneSplits = 0L
  private var splitsOpened = 0L
  private var remaining: Long = partition.limit.fold(Long.MaxValue)(_.toLong)

  // A task's error reaches the driver as the cause of the job's failure: in Spark's framework too.
  override def next(): Boolean = LanceErrors.converting(advance())

  private def advance(): Boolean = {
    while (remaining > 0) {
      if (reader == null) {
        val opening = upcoming.orElse(Option.when(splits.hasNext)(open(splits.next()))).getOrElse(return false)
        // The next split starts opening before this one is open: opening can be most of a split's
        // work (a MERGE's key sets tested on every key of a split that keeps none).
        upcoming = Option.when(splits.hasNext)(open(splits.next()))
        reader = opening.result
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

  private def open(split: FragmentSplit): Background[FragmentSplitReader] =
    target.storage.inBackground(target.tablePath)(() => SQLConf.withExistingConf(conf)(new FragmentSplitReader(target, split, allocator)))

  /** The next split, opened or opening for nothing (a limit reached, a task ending early), is closed once open. */
  private def closeUpcoming(): Unit = upcoming.foreach { opening =>
    upcoming = None
    if (!opening.cancel()) {
      // Its memory comes from the partition's allocator, closed next: waited for even when the task is interrupted.
      var interrupted = false
      var waiting = true
      while (waiting) {
        try { opening.result.close(); waiting = false }
        catch {
          case _: InterruptedException => interrupted = true
          case NonFatal(_) => waiting = false // a split that failed to open holds nothing, and its error is no one's
        }
      }
      if (interrupted) Thread.currentThread().interrupt()
    }
  }

  override def close(): Unit =
    Resources.closeAll(Seq[AutoCloseable](() => if (reader != null) closeSplit(), () => closeUpcoming(), allocator))
}
