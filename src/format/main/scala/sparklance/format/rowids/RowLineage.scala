package sparklance.format.rowids

import com.google.protobuf.ByteString
import sparklance.format.{CorruptFileException, LanceException, UnsupportedFeatureException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, ExternalFile}
import sparklance.format.table.{BasePaths, Snapshot}

/**
 * The lineage a stable-row-id table keeps per fragment: one row id and two versions (created at,
 * last updated at) per physical row, deleted rows included, in row offset order.
 */
object RowLineage {

  /**
   * Rows an UPDATE or MERGE rewrote keep their identity: hands each fragment holding such rows,
   * in order, the row ids and created-at versions of its rows (`ids` and `createdAt` run over all
   * the fragments' rows together). The commit then stamps their last-updated version.
   */
  def carry(fragments: Seq[DataFragment], ids: Array[Long], createdAt: Array[Long]): Seq[DataFragment] =
    cut(fragments, ids, createdAt, None)

  /**
   * Rows a compaction moved keep all their lineage: hands each new fragment, in order, the row
   * ids and both versions of its rows (the arrays run over all the fragments' rows together).
   */
  def moved(fragments: Seq[DataFragment], ids: Array[Long], createdAt: Array[Long], lastUpdatedAt: Array[Long]): Seq[DataFragment] =
    cut(fragments, ids, createdAt, Some(lastUpdatedAt))

  private def cut(fragments: Seq[DataFragment], ids: Array[Long], createdAt: Array[Long],
      lastUpdatedAt: Option[Array[Long]]): Seq[DataFragment] = {
    val total = fragments.map(_.getPhysicalRows).sum
    if (total != ids.length || total != createdAt.length || lastUpdatedAt.exists(_.length != total))
      throw new IllegalArgumentException(s"$total rewritten rows, but ${ids.length} row ids and ${createdAt.length} versions")
    var from = 0
    fragments.map { f =>
      val until = from + f.getPhysicalRows.toInt
      val b = f.toBuilder
        .setInlineRowIds(ByteString.copyFrom(RowIdSequences.encode(ids.slice(from, until))))
        .setInlineCreatedAtVersions(ByteString.copyFrom(VersionSequences.encode(createdAt.slice(from, until))))
      lastUpdatedAt.foreach(v => b.setInlineLastUpdatedAtVersions(ByteString.copyFrom(VersionSequences.encode(v.slice(from, until)))))
      from = until
      b.build()
    }
  }

  /**
   * Gives a new fragment its row ids and versions as `version` commits it. A fragment may arrive
   * with a prefix of row ids and created-at versions already set (rows an UPDATE or MERGE
   * rewrote, which keep their identity); its remaining rows are new and get ids from `nextRowId`.
   * Returns the fragment and the next unused row id. Runs again on every commit attempt, so a
   * retry against a newer version re-assigns from that version's high-water mark.
   */
  def assign(fragment: DataFragment, nextRowId: Long, version: Long): (DataFragment, Long) = {
    val rows = fragment.getPhysicalRows
    val source = s"new fragment (${fragment.getFilesList.size} data files)"
    val kept = if (fragment.hasInlineRowIds) RowIdSequences.count(fragment.getInlineRowIds.toByteArray) else 0L
    if (kept > rows)
      throw new LanceException(s"$source carries $kept row ids for $rows rows")
    val keptCreated = if (fragment.hasInlineCreatedAtVersions)
      VersionSequences.decode(fragment.getInlineCreatedAtVersions.toByteArray, source) else Array.emptyLongArray
    if (keptCreated.length != kept)
      throw new LanceException(s"$source carries $kept row ids but ${keptCreated.length} created-at versions")
    val fresh = rows - kept
    val ids =
      if (kept == 0) RowIdSequences.range(nextRowId, fresh)
      else if (fresh == 0) fragment.getInlineRowIds.toByteArray
      else RowIdSequences.appendRange(fragment.getInlineRowIds.toByteArray, nextRowId, fresh)
    val created =
      if (kept == 0) VersionSequences.uniform(rows, version)
      else VersionSequences.encode(keptCreated ++ Array.fill(fresh.toInt)(version))
    val b = fragment.toBuilder.setInlineRowIds(ByteString.copyFrom(ids))
      .setInlineCreatedAtVersions(ByteString.copyFrom(created))
      .setInlineLastUpdatedAtVersions(ByteString.copyFrom(VersionSequences.uniform(rows, version)))
    (b.build(), nextRowId + fresh)
  }

  /**
   * A fragment whose column data `version` wrote anew (a column added with values, or rewritten):
   * every row, deleted ones included, was last updated then, as Lance records it (one run).
   */
  def touched(fragment: DataFragment, version: Long): DataFragment =
    fragment.toBuilder.clearExternalLastUpdatedAtVersions()
      .setInlineLastUpdatedAtVersions(ByteString.copyFrom(VersionSequences.uniform(fragment.getPhysicalRows, version))).build()

  /**
   * A fragment some of whose rows (`offsets`) `version` updated in place: their last-updated
   * version becomes `version`, the other rows keep theirs (1 where the fragment has no sequence,
   * as readers assume).
   */
  def updatedAt(storage: Storage, tablePath: String, fragment: DataFragment, offsets: org.roaringbitmap.RoaringBitmap,
      version: Long): DataFragment = {
    val versions = lastUpdatedAt(storage, tablePath, fragment).getOrElse(Array.fill(fragment.getPhysicalRows.toInt)(1L))
    offsets.forEach((o: Int) => versions(o) = version)
    fragment.toBuilder.clearExternalLastUpdatedAtVersions()
      .setInlineLastUpdatedAtVersions(ByteString.copyFrom(VersionSequences.encode(versions))).build()
  }

  /** A fragment as a table without stable row ids stores it: no lineage fields. */
  def strip(fragment: DataFragment): DataFragment =
    if (!fragment.hasInlineRowIds && !fragment.hasInlineCreatedAtVersions && !fragment.hasInlineLastUpdatedAtVersions) fragment
    else fragment.toBuilder.clearInlineRowIds().clearInlineCreatedAtVersions().clearInlineLastUpdatedAtVersions().build()

  /** The fragment's row ids, or None when the table has no stable row ids (ids are then addresses). */
  def rowIds(storage: Storage, tablePath: String, fragment: DataFragment): Option[Array[Long]] = {
    val where = s"row ids of fragment ${fragment.getId} in $tablePath"
    rowIdBytes(storage, tablePath, fragment, where).map { b =>
      val ids = RowIdSequences.decode(b, where)
      checkLength(ids.length, fragment, where)
      ids
    }
  }

  /** The fragment's row ids by offset, without expanding them, or None as [[rowIds]]. */
  def rowIdLookup(storage: Storage, tablePath: String, fragment: DataFragment): Option[RowIdLookup] = {
    val where = s"row ids of fragment ${fragment.getId} in $tablePath"
    rowIdBytes(storage, tablePath, fragment, where).map { b =>
      val lookup = RowIdSequences.lookup(b, where)
      checkLength(lookup.count, fragment, where)
      lookup
    }
  }

  /** The fragment's created-at versions by offset, without expanding them; None where it has none. */
  def createdAtLookup(storage: Storage, tablePath: String, fragment: DataFragment): Option[VersionLookup] = {
    val where = s"created-at versions of fragment ${fragment.getId} in $tablePath"
    versionLookup(fragment, where, createdBytes(storage, tablePath, fragment, where))
  }

  /** The fragment's last-updated-at versions by offset, without expanding them; None where it has none. */
  def lastUpdatedAtLookup(storage: Storage, tablePath: String, fragment: DataFragment): Option[VersionLookup] = {
    val where = s"last-updated-at versions of fragment ${fragment.getId} in $tablePath"
    versionLookup(fragment, where, lastUpdatedBytes(storage, tablePath, fragment, where))
  }

  private def versionLookup(fragment: DataFragment, where: String, bytes: Option[Array[Byte]]): Option[VersionLookup] =
    bytes.map { b =>
      val lookup = VersionSequences.lookup(b, where)
      checkLength(lookup.count, fragment, where)
      lookup
    }

  private def rowIdBytes(storage: Storage, tablePath: String, fragment: DataFragment, where: String): Option[Array[Byte]] =
    sequenceBytes(storage, tablePath, where, Option.when(fragment.hasInlineRowIds)(fragment.getInlineRowIds),
      Option.when(fragment.hasExternalRowIds)(fragment.getExternalRowIds))

  /** Whether some row of the fragment was last updated at `version`, from its sequence alone (not expanded). */
  def lastUpdatedMentions(storage: Storage, tablePath: String, fragment: DataFragment, version: Long): Boolean = {
    val where = s"last-updated-at versions of fragment ${fragment.getId} in $tablePath"
    lastUpdatedBytes(storage, tablePath, fragment, where).exists(VersionSequences.mentions(_, version, where))
  }

  private def lastUpdatedBytes(storage: Storage, tablePath: String, fragment: DataFragment, where: String): Option[Array[Byte]] =
    sequenceBytes(storage, tablePath, where, Option.when(fragment.hasInlineLastUpdatedAtVersions)(fragment.getInlineLastUpdatedAtVersions),
      Option.when(fragment.hasExternalLastUpdatedAtVersions)(fragment.getExternalLastUpdatedAtVersions))

  private def createdBytes(storage: Storage, tablePath: String, fragment: DataFragment, where: String): Option[Array[Byte]] =
    sequenceBytes(storage, tablePath, where, Option.when(fragment.hasInlineCreatedAtVersions)(fragment.getInlineCreatedAtVersions),
      Option.when(fragment.hasExternalCreatedAtVersions)(fragment.getExternalCreatedAtVersions))

  /** A sequence's bytes: inline in the manifest, or a slice of a file beside it. */
  private def sequenceBytes(storage: Storage, tablePath: String, where: String, inline: Option[ByteString],
      ext: Option[ExternalFile]): Option[Array[Byte]] =
    inline.map(_.toByteArray).orElse(ext.map(external(storage, tablePath, _, where)))

  def createdAt(storage: Storage, tablePath: String, fragment: DataFragment): Option[Array[Long]] = {
    val where = s"created-at versions of fragment ${fragment.getId} in $tablePath"
    versions(fragment, where, createdBytes(storage, tablePath, fragment, where))
  }

  def lastUpdatedAt(storage: Storage, tablePath: String, fragment: DataFragment): Option[Array[Long]] = {
    val where = s"last-updated-at versions of fragment ${fragment.getId} in $tablePath"
    versions(fragment, where, lastUpdatedBytes(storage, tablePath, fragment, where))
  }

  private def versions(fragment: DataFragment, where: String, bytes: Option[Array[Byte]]): Option[Array[Long]] =
    bytes.map { b =>
      val v = VersionSequences.decode(b, where)
      checkLength(v.length, fragment, where)
      v
    }

  private def checkLength(n: Long, fragment: DataFragment, where: String): Unit =
    if (n != fragment.getPhysicalRows)
      throw new CorruptFileException(where, s"$n entries for ${fragment.getPhysicalRows} physical rows")

  /** The row id index of a snapshot's live rows (for a table with stable row ids). */
  def index(storage: Storage, snapshot: Snapshot): RowIdIndex =
    index(storage, snapshot.files, snapshot.fragments, s"the row id index of ${snapshot.tablePath} version ${snapshot.version}")

  /** The row id index of the live rows of some fragments of a table. */
  def index(storage: Storage, files: BasePaths, fragments: Seq[DataFragment], what: String): RowIdIndex = {
    val tablePath = files.tablePath
    RowIdIndex.build(fragments.map { f =>
      RowIdIndex.FragmentIds(f.getId, rowIds(storage, tablePath, f).getOrElse(throw new UnsupportedFeatureException(
        s"Fragment ${f.getId} of $tablePath has no row ids, though the table declares stable row ids")),
        DeletionFiles.read(storage, files, f))
    }, what)
  }

  /** Bytes of a sequence kept outside the manifest: a slice of a file under the table root. */
  private def external(storage: Storage, tablePath: String, file: ExternalFile, where: String): Array[Byte] = {
    if (file.getSize > Int.MaxValue) throw new CorruptFileException(where, s"external slice of ${file.getSize} bytes")
    val in = storage.openInput(Storage.join(tablePath, file.getPath))
    try in.read(file.getOffset, file.getSize.toInt)
    finally in.close()
  }
}
