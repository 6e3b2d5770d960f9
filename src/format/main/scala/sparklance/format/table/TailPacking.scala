package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import sparklance.format.Resources
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{WrittenZones, ZoneColumn}

/**
 * The partial fragments ("tails") of one uncommitted write packed into as few fragments as its
 * rows need. A write whose tasks each cut their rows at `maxRowsPerFile` leaves one tail per task;
 * an append should leave ceil(rows / maxRowsPerFile) fragments, which is `full + ceil(tailRows /
 * maxRowsPerFile)`. Packing rewrites the fewest rows that get there: the largest tails stay as
 * they are and the smallest are read back and written again, cut at `maxRowsPerFile`.
 */
object TailPacking {
  /**
   * Positions in `rows` (the row counts of a write's fragments) of the tails to rewrite: the
   * smallest ones, as few rows as possible, such that the largest tails kept plus the fragments
   * the rewritten ones make number ceil(tail rows / `maxRowsPerFile`). Empty when the count is
   * already that.
   */
  def plan(rows: Seq[Long], maxRowsPerFile: Long): Seq[Int] = {
    def fragmentsOf(n: Long): Long = (n + maxRowsPerFile - 1) / maxRowsPerFile
    val tails = rows.indices.filter(i => rows(i) > 0 && rows(i) < maxRowsPerFile).sortBy(i => -rows(i))
    val tailRows = tails.map(rows).sum
    val needed = fragmentsOf(tailRows)
    if (tails.size <= needed) Nil
    else {
      // Keeping the k largest: k fragments plus what the rest make once rewritten. k = 0 always fits.
      val suffixRows = tails.map(rows).scanRight(0L)(_ + _)
      val kept = (tails.size - 1 to 0 by -1).find(k => k + fragmentsOf(suffixRows(k)) <= needed).getOrElse(0)
      tails.drop(kept)
    }
  }

  /**
   * `tails` (uncommitted fragments of `schema` under `files`, one data file each) read back in
   * order and written again as fragments of `maxRowsPerFile` rows, with the zones of `zoneColumns`.
   * The caller deletes the tails' files once it uses the new fragments.
   */
  def rewrite(storage: Storage, files: BasePaths, schema: LanceSchema, version: StorageVersion, allocator: BufferAllocator,
      maxRowsPerFile: Long, zoneColumns: Seq[ZoneColumn], tails: Seq[DataFragment]): (Seq[DataFragment], WrittenZones) = {
    val writer = new FragmentWriter(storage, files.tablePath, schema, version, allocator, maxRowsPerFile, zoneColumns = zoneColumns)
    Resources.closeOnFailure(Seq(writer)) {
      for (tail <- tails) {
        val scanner = new FragmentScanner(storage, files, tail, schema.fields, allocator, 0L, tail.getPhysicalRows)
        try scanner.foreach { batch => try writer.write(batch.vectors) finally batch.close() }
        finally scanner.close()
      }
      val written = writer.finish()
      (written, writer.zones)
    }
  }

  /** Whether [[rewrite]] can read back and write again fragments of `schema`: blobs live in sidecars it does not carry over. */
  def supports(schema: LanceSchema): Boolean = !schema.fields.exists(_.preOrder.exists(_.blobEncoding.isDefined))
}
