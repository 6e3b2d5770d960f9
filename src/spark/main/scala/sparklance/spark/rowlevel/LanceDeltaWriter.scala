package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DeltaWriter, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.Resources
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.rowids.RowLineage
import sparklance.format.table.RowAddress
import sparklance.spark.Allocators
import sparklance.spark.write.{FragmentSink, WriteTarget}

/**
 * Executes one task's share of a DELETE / UPDATE / MERGE: deleted row addresses go into one
 * bitmap per fragment, new and updated rows into new data files. Rows arrive clustered by
 * fragment and ordered by address, so bitmap inserts are appends. With stable row ids, updated
 * rows go to their own fragments, which carry each row's id and created-at version; inserted
 * rows go to fragments whose ids the commit assigns.
 */
final class LanceDeltaWriter(target: WriteTarget, rowSchema: StructType, lineage: Option[(Int, Int)], name: String)
    extends DeltaWriter[InternalRow] {

  private val deleted = mutable.HashMap.empty[Long, RoaringBitmap]
  private var deletes, updates, inserts = 0L
  private var allocator: org.apache.arrow.memory.BufferAllocator = _
  private var fresh: FragmentSink = _
  private var kept: FragmentSink = _
  private val keptIds = new mutable.ArrayBuilder.ofLong
  private val keptCreated = new mutable.ArrayBuilder.ofLong

  private def sink(): FragmentSink = {
    if (allocator == null) allocator = Allocators.child(name)
    new FragmentSink(target, rowSchema.fields.map(_.dataType).toSeq, allocator)
  }

  private def markDeleted(id: InternalRow): Unit = {
    val address = id.getLong(0)
    deleted.getOrElseUpdate(RowAddress.fragmentId(address), new RoaringBitmap()).add(RowAddress.offset(address).toInt)
  }

  override def delete(metadata: InternalRow, id: InternalRow): Unit = { markDeleted(id); deletes += 1 }

  override def update(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit = {
    markDeleted(id)
    lineage match {
      case Some((idAt, createdAt)) =>
        if (kept == null) kept = sink()
        keptIds += metadata.getLong(idAt)
        keptCreated += metadata.getLong(createdAt)
        kept.append(row)
      case None => insertRow(row)
    }
    updates += 1
  }

  override def insert(row: InternalRow): Unit = { insertRow(row); inserts += 1 }

  private def insertRow(row: InternalRow): Unit = {
    if (fresh == null) fresh = sink()
    fresh.append(row)
  }

  override def commit(): WriterCommitMessage = {
    val rewritten = if (kept == null) Nil else RowLineage.carry(kept.finish(), keptIds.result(), keptCreated.result())
    val added = if (fresh == null) Nil else fresh.finish()
    DeltaMessage(deleted.map { case (id, b) => id -> PortableBitmaps.toBytes(b) }.toMap,
      (rewritten ++ added).map(_.toByteArray).toArray, deletes, updates, inserts)
  }

  override def abort(): Unit = Seq(kept, fresh).filter(_ != null).foreach(_.abort())

  override def currentMetricsValues(): Array[CustomTaskMetric] = DmlMetrics.task(deletes, updates, inserts)

  override def close(): Unit = Resources.closeAll(Seq(kept, fresh, allocator))
}
