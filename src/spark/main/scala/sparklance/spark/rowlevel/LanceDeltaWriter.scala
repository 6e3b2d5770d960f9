package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DeltaWriter, WriterCommitMessage}
import org.apache.spark.sql.types.StructType
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFile
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.rowids.RowLineage
import sparklance.format.skipping.WrittenZones
import sparklance.format.table.RowAddress
import sparklance.spark.Allocators
import sparklance.spark.errors.LanceErrors
import sparklance.spark.write.{FragmentSink, IdentityValues, WriteTarget}

/**
 * Executes one task's share of a DELETE / UPDATE / MERGE: deleted row addresses go into one
 * bitmap per fragment, new and updated rows into new data files. Rows of an UPDATE arrive clustered
 * by fragment (other statements' may not; the driver merges the tasks' bitmaps), in address order
 * only when updates may stay in place. With stable row ids, updated
 * rows go to their own fragments, which carry each row's id and created-at version; inserted
 * rows go to fragments whose ids the commit assigns. With `inPlace`, a fragment's updated rows
 * may instead stay where they are, their assigned columns written anew (see [[InPlaceFragment]]).
 */
final class LanceDeltaWriter(target: WriteTarget, rowSchema: StructType, lineage: Option[(Int, Int)], name: String,
    inPlace: Option[InPlaceUpdates] = None, identity: Option[IdentityValues] = None) extends DeltaWriter[InternalRow] {

  private val deleted = mutable.HashMap.empty[Long, RoaringBitmap]
  private var deletes, updates, inserts = 0L
  private var allocator: org.apache.arrow.memory.BufferAllocator = _
  private var fresh: FragmentSink = _
  private var kept: FragmentSink = _
  private val keptIds = new mutable.ArrayBuilder.ofLong
  private val keptCreated = new mutable.ArrayBuilder.ofLong
  private val rowTypes = rowSchema.fields.map(_.dataType).toSeq
  private var fragmentUpdates: InPlaceFragment = _
  private val columnFiles = mutable.LinkedHashMap.empty[Long, (DataFile, RoaringBitmap)]
  private var updatedInPlace = 0L

  private def sink(): FragmentSink = {
    if (allocator == null) allocator = Allocators.child(name)
    new FragmentSink(target, rowSchema.fields.map(_.dataType).toSeq, allocator)
  }

  private def markDeleted(id: InternalRow): Unit = {
    val address = id.getLong(0)
    deleted.getOrElseUpdate(RowAddress.fragmentId(address), new RoaringBitmap()).add(RowAddress.offset(address).toInt)
  }

  override def delete(metadata: InternalRow, id: InternalRow): Unit = { markDeleted(id); deletes += 1 }

  // The row-by-row calls convert errors without LanceErrors.converting's closure, which a call
  // per row would allocate.
  override def update(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit =
    try updateRow(metadata, id, row) catch { case e: Exception => throw LanceErrors.convert(e) }

  private def updateRow(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit = {
    inPlace match {
      case None => rewrite(metadata, id, row)
      case Some(plan) =>
        val fragment = RowAddress.fragmentId(id.getLong(0))
        if (fragmentUpdates == null || fragmentUpdates.fragmentId != fragment) {
          finishFragment()
          if (allocator == null) allocator = Allocators.child(name)
          fragmentUpdates = new InPlaceFragment(fragment, plan, target, rowTypes, allocator, rewrite)
        }
        fragmentUpdates.update(metadata, id, row)
    }
    updates += 1
  }

  /** Closes the fragment whose updates came last: its column file, or its rows rewritten whole. */
  private def finishFragment(): Unit = if (fragmentUpdates != null) {
    val done = fragmentUpdates
    done.finish().foreach { file =>
      columnFiles(done.fragmentId) = file -> done.rows
      updatedInPlace += done.rows.getLongCardinality
    }
    done.close()
    fragmentUpdates = null
  }

  /** Tombstones the row and writes it whole into a new fragment. */
  private def rewrite(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit = {
    markDeleted(id)
    lineage match {
      case Some((idAt, createdAt)) =>
        if (kept == null) kept = sink()
        keptIds += metadata.getLong(idAt)
        keptCreated += metadata.getLong(createdAt)
        kept.append(row)
      case None => insertRow(row)
    }
  }

  // Inserted rows get their identity values here; updated rows keep the ones they have.
  private val identityValues = identity.orNull

  override def insert(row: InternalRow): Unit = {
    try insertRow(if (identityValues == null) row else identityValues.fill(row)) catch { case e: Exception => throw LanceErrors.convert(e) }
    inserts += 1
  }

  private def insertRow(row: InternalRow): Unit = {
    if (fresh == null) fresh = sink()
    fresh.append(row)
  }

  override def commit(): WriterCommitMessage = LanceErrors.converting {
    finishFragment()
    val rewritten = if (kept == null) Nil else RowLineage.carry(kept.finish(), keptIds.result(), keptCreated.result())
    val added = if (fresh == null) Nil else fresh.finish()
    DeltaMessage(deleted.map { case (id, b) => id -> PortableBitmaps.toBytes(b) }.toMap,
      (rewritten ++ added).map(_.toByteArray).toArray, deletes, updates, inserts,
      columnFiles.map { case (id, (file, rows)) => id -> (file.toByteArray, PortableBitmaps.toBytes(rows)) }.toMap,
      Seq(kept, fresh).filter(_ != null).map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _),
      identity.fold(Map.empty[String, Long])(_.furthest))
  }

  override def abort(): Unit = {
    Seq(kept, fresh).filter(_ != null).foreach(_.abort())
    if (fragmentUpdates != null) fragmentUpdates.abort()
    // Column files of fragments already finished: nothing references them.
    columnFiles.values.foreach { case (file, _) =>
      try target.storage.delete(sparklance.format.io.Storage.join(target.tablePath, s"data/${file.getPath}"))
      catch { case scala.util.control.NonFatal(_) => }
    }
  }

  // Spark may read the metrics for the last time before commit() closes the last fragment.
  override def currentMetricsValues(): Array[CustomTaskMetric] = {
    val open = Option(fragmentUpdates).filter(_.inPlace)
    DmlMetrics.task(deletes, updates, inserts, updatedInPlace + open.fold(0L)(_.rows.getLongCardinality),
      columnFiles.size + open.size)
  }

  override def close(): Unit = Resources.closeAll(Seq(fragmentUpdates, kept, fresh, allocator))
}
