package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DeltaWriter, DeltaWriterFactory, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.table.FragmentWriter
import sparklance.spark.Allocators
import sparklance.spark.write.{ArrowRowWriter, WriteTarget}

final class LanceDeltaWriterFactory(target: WriteTarget, rowSchema: StructType) extends DeltaWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DeltaWriter[InternalRow] =
    new LanceDeltaWriter(target, rowSchema, s"delta-$partitionId-$taskId")
}

/**
 * Executes one task's share of a DELETE / UPDATE / MERGE: deleted row addresses go into one
 * bitmap per fragment, new and updated rows into new data files. Rows arrive clustered by
 * fragment and ordered by address, so bitmap inserts are appends.
 */
final class LanceDeltaWriter(target: WriteTarget, rowSchema: StructType, name: String) extends DeltaWriter[InternalRow] {
  private val BatchRows = 8192

  private val deleted = mutable.HashMap.empty[Long, RoaringBitmap]
  private var deletes, updates, inserts = 0L
  private var allocator: org.apache.arrow.memory.BufferAllocator = _
  private var rows: ArrowRowWriter = _
  private var files: FragmentWriter = _

  private def markDeleted(id: InternalRow): Unit = {
    val address = id.getLong(0)
    deleted.getOrElseUpdate(address >>> 32, new RoaringBitmap()).add((address & 0xFFFFFFFFL).toInt)
  }

  private def append(row: InternalRow): Unit = {
    if (rows == null) {
      allocator = Allocators.child(name)
      val schema = target.schema
      rows = new ArrowRowWriter(target.tableName, schema.fields, rowSchema.fields.map(_.dataType).toSeq, allocator)
      files = new FragmentWriter(target.storage, target.tablePath, schema, target.dataStorageVersion, allocator, target.maxRowsPerFile)
    }
    rows.append(row)
    if (rows.count >= BatchRows) flush()
  }

  private def flush(): Unit = if (rows != null && rows.count > 0) {
    files.write(rows.seal())
    rows.reset()
  }

  override def delete(metadata: InternalRow, id: InternalRow): Unit = { markDeleted(id); deletes += 1 }

  override def update(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit = {
    markDeleted(id); append(row); updates += 1
  }

  override def insert(row: InternalRow): Unit = { append(row); inserts += 1 }

  override def commit(): WriterCommitMessage = {
    flush()
    val fragments = if (files == null) Nil else files.finish()
    DeltaMessage(deleted.map { case (id, b) => id -> DeltaMessage.serialize(b) }.toMap,
      fragments.map(_.toByteArray).toArray, deletes, updates, inserts)
  }

  override def abort(): Unit = if (files != null) files.abort()

  override def currentMetricsValues(): Array[CustomTaskMetric] = DmlMetrics.task(deletes, updates, inserts)

  override def close(): Unit = {
    if (files != null) files.close()
    if (rows != null) rows.close()
    if (allocator != null) allocator.close()
  }
}
