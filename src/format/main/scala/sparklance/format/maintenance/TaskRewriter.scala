package sparklance.format.maintenance

import org.apache.arrow.memory.BufferAllocator
import scala.collection.mutable.ArrayBuilder
import scala.util.control.NonFatal
import sparklance.format.LanceException
import sparklance.format.commit.Operation
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.rowids.RowLineage
import sparklance.format.skipping.ZoneColumn
import sparklance.format.table.{FragmentRead, FragmentWriter, Snapshot}

/**
 * Runs one compaction task anywhere (a Spark task, a thread): reads the live rows of its
 * fragments in order, with the table's current columns (so dropped columns disappear), and
 * writes them into new fragments of the table's file version, gathering the zones of
 * `zoneColumns`. On a table with stable row ids
 * each row keeps its id and both versions. The new fragments have no ids yet; nothing is
 * referenced until the compaction commits, and a failed task removes what it wrote.
 */
object TaskRewriter {
  def rewrite(storage: Storage, snapshot: Snapshot, task: CompactionTask, allocator: BufferAllocator,
      zoneColumns: Seq[ZoneColumn] = Nil): Operation.RewriteGroup = {
    val writer = new FragmentWriter(storage, snapshot.tablePath, snapshot.schema, snapshot.storageVersion, allocator,
      FragmentWriter.MaxRowsPerFile, task.outputRows, zoneColumns)
    // Lance's rechunking of stable row ids: the lineage of the rows the scan keeps, in the order it
    // writes them, later cut at the new fragments' boundaries.
    val ids, createdAt, updatedAt = new ArrayBuilder.ofLong
    try {
      var rows = 0L
      for (f <- task.fragments) {
        val lineage = if (snapshot.stableRowIds) Some(lineageOf(storage, snapshot.tablePath, f)) else None
        val scanner = FragmentRead(snapshot.files, f, snapshot.schema.fields).open(storage, allocator)
        try scanner.foreach { batch =>
          try {
            writer.write(batch.vectors)
            rows += batch.numRows
            lineage.foreach { case (i, c, u) =>
            var k = 0
            while (k < batch.offsets.length) { val o = batch.offsets(k); ids += i(o); createdAt += c(o); updatedAt += u(o); k += 1 }
          }
          } finally batch.close()
        } finally scanner.close()
      }
      val written = writer.finish()
      if (rows != task.liveRows)
        throw new LanceException(s"Compaction of ${snapshot.tablePath} read $rows live rows from fragments " +
          s"${task.fragmentIds.mkString(", ")}, whose metadata promises ${task.liveRows}")
      val created = if (snapshot.stableRowIds) RowLineage.moved(written, ids.result(), createdAt.result(), updatedAt.result()) else written
      Operation.RewriteGroup(task.fragments, created, writer.zones)
    } catch {
      case NonFatal(e) => writer.abort(); throw e
    } finally writer.close()
  }

  /**
   * A fragment's row ids and both versions per physical row. Missing versions default as Lance's
   * do: created at version 1, last updated when created.
   */
  private def lineageOf(storage: Storage, tablePath: String, f: DataFragment): (Array[Long], Array[Long], Array[Long]) = {
    val rowIds = RowLineage.rowIds(storage, tablePath, f).getOrElse(throw new LanceException(
      s"Fragment ${f.getId} of $tablePath has no row ids, though the table declares stable row ids"))
    val created = RowLineage.createdAt(storage, tablePath, f).getOrElse(Array.fill(rowIds.length)(1L))
    (rowIds, created, RowLineage.lastUpdatedAt(storage, tablePath, f).getOrElse(created))
  }
}
