package sparklance.format.rowids

import org.roaringbitmap.{RoaringBitmap, RoaringBitmapWriter}
import scala.jdk.CollectionConverters._
import sparklance.format.UnsupportedFeatureException
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.Snapshot

/**
 * Rows of one fragment that one commit changed. `rows` are physical offsets in `fragment` as it
 * is at `readAt`: for the new side (inserted rows and new images of updated rows) the commit's
 * own version, for the old side (deleted rows and old images) the version before it. `updated`
 * is the subset of `rows` that are images of an update rather than an insert or a delete.
 */
final case class ChangedRows(fragment: DataFragment, readAt: Long, newSide: Boolean, rows: RoaringBitmap,
    updated: RoaringBitmap)

/**
 * What commit `after.version` did to the rows of a table with stable row ids, from metadata
 * alone: rows whose last-updated version is that commit are inserts (created then) or new images
 * of updates; rows whose ids were live before and are not live after were deleted, and rows whose
 * ids were live before and updated by the commit left their old image behind. Rows that only moved
 * (compaction keeps ids and versions) are not changes.
 */
object CommitChanges {
  def of(storage: Storage, before: Option[Snapshot], after: Snapshot): Seq[ChangedRows] = {
    val path = after.tablePath
    val version = after.version
    def requireLineage(s: Snapshot): Unit = if (!s.stableRowIds)
      throw new UnsupportedFeatureException(s"Version ${s.version} of $path has no stable row ids, so its changes " +
        "cannot be told apart; change data needs a table created with enable_stable_row_ids")
    requireLineage(after)
    before.foreach(requireLineage)

    // New side: fragments holding rows the commit wrote. The ids of updated rows are collected
    // into an array, sorted once and searched by the old side (a Roaring64Bitmap's per-id adds and
    // lookups were most of the planning time of a commit updating rows all over the table).
    val updatedIds = new scala.collection.mutable.ArrayBuilder.ofLong
    // Rows whose columns were rewritten in place (same fragment, new files): their old image is at
    // the same offset of the fragment as it was.
    val inPlace = scala.collection.mutable.Map.empty[Long, RoaringBitmap]
    val beforeById = before.map(_.fragments.map(f => f.getId -> f).toMap).getOrElse(Map.empty)
    val newSide = after.fragments.filter(RowLineage.lastUpdatedMentions(storage, path, _, version)).flatMap { f =>
      RowLineage.lastUpdatedAt(storage, path, f).map { lastUpdated =>
        val ids = RowLineage.rowIds(storage, path, f).getOrElse(missing(path, f))
        val created = RowLineage.createdAt(storage, path, f).getOrElse(missing(path, f))
        val deleted = DeletionFiles.read(storage, after.files, f)
        val rewritten = beforeById.get(f.getId).exists(_.getFilesList != f.getFilesList)
        // Offsets come in ascending order: writers append them without searching.
        val rows = RoaringBitmapWriter.writer().get()
        val updated = RoaringBitmapWriter.writer().get()
        var i = 0
        while (i < lastUpdated.length) {
          if (lastUpdated(i) == version && !deleted.contains(i)) {
            rows.add(i)
            if (created(i) < version) { updated.add(i); updatedIds += ids(i) }
          }
          i += 1
        }
        val (changed, images) = (rows.get(), updated.get())
        if (rewritten && !images.isEmpty) inPlace(f.getId) = images.clone()
        ChangedRows(f, version, newSide = true, changed, images)
      }
    }.filter(!_.rows.isEmpty)
    val updatedSorted = updatedIds.result()
    java.util.Arrays.sort(updatedSorted)
    def wasUpdated(id: Long): Boolean = java.util.Arrays.binarySearch(updatedSorted, id) >= 0

    // Old side: rows live before that this commit tombstoned or dropped with their fragment.
    val oldSide = before.toSeq.flatMap { prev =>
      val now = after.fragments.map(f => f.getId -> f).toMap
      // A row that only moved (compaction) lands in a fragment this commit created, so only those
      // fragments are indexed; a commit that created none moved nothing.
      lazy val movedHere = {
        val known = prev.fragments.map(_.getId).toSet
        RowLineage.index(storage, after.files, after.fragments.filterNot(f => known.contains(f.getId)),
          s"the row id index of fragments new in version $version of $path")
      }
      prev.fragments.flatMap { f =>
        val was = DeletionFiles.read(storage, after.files, f)
        val gone = now.get(f.getId) match {
          case None => RoaringBitmap.flip(was, 0L, f.getPhysicalRows)
          case Some(g) if g.getDeletionFile == f.getDeletionFile => new RoaringBitmap()
          case Some(g) => RoaringBitmap.andNot(DeletionFiles.read(storage, after.files, g), was)
        }
        if (gone.isEmpty) None
        else {
          val offsets = gone.toArray
          val ids = RowLineage.rowIdLookup(storage, path, f).getOrElse(missing(path, f)).idsAt(offsets)
          val rows = RoaringBitmapWriter.writer().get()
          val updated = RoaringBitmapWriter.writer().get()
          var k = 0
          while (k < offsets.length) {
            if (wasUpdated(ids(k))) { rows.add(offsets(k)); updated.add(offsets(k)) }
            else if (!movedHere.contains(ids(k))) rows.add(offsets(k))
            k += 1
          }
          val changed = rows.get()
          if (changed.isEmpty) None else Some(ChangedRows(f, prev.version, newSide = false, changed, updated.get()))
        }
      }
    }
    val rewrittenInPlace = before.toSeq.flatMap(prev => inPlace.toSeq.map { case (id, rows) =>
      ChangedRows(beforeById(id), prev.version, newSide = false, rows, rows.clone())
    })
    oldSide ++ rewrittenInPlace ++ newSide
  }

  /**
   * What a Restore commit changed. It brings back an older version's rows with their old lineage,
   * so no row carries the commit's version; its changes are the difference, by row id, between
   * the version before and the restored one: ids live only before were deleted, ids live only
   * after inserted, and ids live in both whose image (last-updated version) differs updated.
   * Fragments both versions hold unchanged hold unchanged rows, and are not read.
   */
  def ofRestore(storage: Storage, before: Snapshot, after: Snapshot): Seq[ChangedRows] = {
    val path = after.tablePath
    Seq(before, after).filterNot(_.stableRowIds).foreach(s => throw new UnsupportedFeatureException(
      s"Version ${s.version} of $path has no stable row ids, so its changes cannot be told apart"))
    val kept = before.fragments.toSet.intersect(after.fragments.toSet)
    final case class Image(fragment: DataFragment, offset: Int, lastUpdated: Long)
    def images(fragments: Seq[DataFragment]): scala.collection.mutable.LongMap[Image] = {
      val out = scala.collection.mutable.LongMap.empty[Image]
      fragments.filterNot(kept).foreach { f =>
        val ids = RowLineage.rowIds(storage, path, f).getOrElse(missing(path, f))
        // Lance's defaults for sequences a writer left out: created at version 1, last updated when created.
        val lastUpdated = RowLineage.lastUpdatedAt(storage, path, f).orElse(RowLineage.createdAt(storage, path, f))
          .getOrElse(Array.fill(ids.length)(1L))
        val deleted = DeletionFiles.read(storage, after.files, f)
        var i = 0
        while (i < ids.length) {
          if (!deleted.contains(i)) out(ids(i)) = Image(f, i, lastUpdated(i))
          i += 1
        }
      }
      out
    }
    val was = images(before.fragments)
    val now = images(after.fragments)
    def side(from: scala.collection.mutable.LongMap[Image], other: scala.collection.mutable.LongMap[Image], readAt: Long,
        newSide: Boolean): Seq[ChangedRows] = {
      val rows = scala.collection.mutable.LinkedHashMap.empty[Long, (DataFragment, RoaringBitmap, RoaringBitmap)]
      from.foreach { case (id, image) =>
        val counterpart = other.get(id)
        if (!counterpart.exists(_.lastUpdated == image.lastUpdated)) {
          val (_, all, updated) = rows.getOrElseUpdate(image.fragment.getId, (image.fragment, new RoaringBitmap(), new RoaringBitmap()))
          all.add(image.offset)
          if (counterpart.isDefined) updated.add(image.offset)
        }
      }
      rows.values.map { case (f, all, updated) => ChangedRows(f, readAt, newSide, all, updated) }.toSeq
    }
    side(was, now, before.version, newSide = false) ++ side(now, was, after.version, newSide = true)
  }

  private def missing(path: String, f: DataFragment): Nothing =
    throw new UnsupportedFeatureException(s"Fragment ${f.getId} of $path has no row id or version sequence, " +
      s"though the table declares stable row ids (files: ${f.getFilesList.asScala.map(_.getPath).mkString(", ")})")
}
