package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.{LanceException, Parallel}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{ColumnFiles, Dataset, PendingSchema, RowAddress, Snapshot}

/**
 * One DELETE, UPDATE or MERGE against the version it read, gathered and committed as one Lance
 * transaction: the rows it removes (by row address, or by offsets per fragment), the fragments
 * holding the rows it inserted or rewrote, then `commit`, which writes a deletion file per touched
 * fragment (or drops a fragment whose rows are all gone) and commits a Delete or an Update with
 * conflict resolution (see [[Committer]]). With a `pending` schema change (whose base is `read`)
 * both land in one commit, also when no row changed. Not thread-safe: one statement's driver fills it.
 */
final class RowLevelCommit(dataset: Dataset, read: Snapshot, pending: Option[PendingSchema] = None) {
  pending.foreach(p => require(p.base eq read, "a pending schema change must be planned on the version the statement read"))
  private val deleted = mutable.Map.empty[Long, RoaringBitmap]
  private val added = mutable.ArrayBuffer.empty[DataFragment]
  private val inPlace = mutable.Map.empty[Long, (DataFile, RoaringBitmap)]
  private var inPlaceFields = Seq.empty[Int]

  /** Removes the row at `address` (fragment id and offset, see [[RowAddress]]). */
  def delete(address: Long): this.type = {
    deleted.getOrElseUpdate(RowAddress.fragmentId(address), new RoaringBitmap()).add(RowAddress.offset(address).toInt)
    this
  }

  /** Removes the rows at `offsets` of fragment `fragmentId`. */
  def delete(fragmentId: Long, offsets: RoaringBitmap): this.type = {
    deleted.getOrElseUpdate(fragmentId, new RoaringBitmap()).or(offsets)
    this
  }

  /** Adds fragments holding inserted rows, or rewritten ones (which may carry their lineage). */
  def add(fragments: Seq[DataFragment]): this.type = { added ++= fragments; this }

  /**
   * Updates `rows` of fragment `fragmentId` in place: `file` holds the new values of `fields`
   * (the same for every fragment of the statement) for all the fragment's rows.
   */
  def updateInPlace(fields: Seq[Int], fragmentId: Long, file: DataFile, rows: RoaringBitmap): this.type = {
    require(inPlace.isEmpty || fields == inPlaceFields, "one statement rewrites the same columns of every fragment")
    inPlaceFields = fields
    inPlace(fragmentId) = file -> rows
    this
  }

  /** Whether the statement changed nothing, and so commits nothing. */
  def isEmpty: Boolean = added.isEmpty && deleted.values.forall(_.isEmpty) && inPlace.isEmpty && pending.isEmpty

  /**
   * Commits the change: a Delete when `kind` is a delete and nothing was added, else an Update.
   * `reads` is what the statement read (None: every row), which matters under serializable
   * isolation. None when the statement changed nothing.
   */
  def commit(kind: RowLevelCommit.Kind, isolation: Isolation = Isolation.Serializable, reads: Option[ReadSet] = None,
      retries: CommitRetries = CommitRetries(), predicate: String = "", indexing: Option[NewFragmentIndices] = None,
      record: Option[CommitRecord] = None, appTxn: Option[TxnMarker] = None,
      claim: Option[MetadataClaim] = None): Option[RowLevelCommit.Result] =
    if (isEmpty) None
    else {
      val rows = added.nonEmpty || deleted.values.exists(!_.isEmpty) || inPlace.nonEmpty
      val change = if (!rows) Operation.Append(Nil)
        else RowLevelCommit.operation(dataset, read, deleted.toMap, added.toSeq, kind == RowLevelCommit.Kind.Delete, predicate,
          inPlace.toMap, inPlaceFields)
      val op = pending.fold(change)(Operation.Evolving(change, _))
      val result = new Committer(dataset, retries, isolation).commit(Some(read), op, reads = reads, indexing = indexing, record = record,
        appTxn = appTxn, claim = claim)
      val deletionFiles = change match {
        case d: Operation.Delete => d.updated.size
        case u: Operation.Update => u.updated.count(f => u.deletedOffsets.contains(f.getId))
        case _ => 0
      }
      Some(RowLevelCommit.Result(result, deletionFiles, added.map(_.getFilesCount.toLong).sum + inPlace.size))
    }
}

object RowLevelCommit {
  /** Which Lance transaction the statement becomes, as pylance writes them. */
  sealed trait Kind
  object Kind {
    /** DELETE: a Lance Delete. */
    case object Delete extends Kind
    /** UPDATE and MERGE: a Lance Update (REWRITE_ROWS). */
    case object Update extends Kind
  }

  /** Deletion files read and written at once by a commit (see [[operation]]). */
  val FileParallelism = 16

  /** The version the statement created and the files it wrote. */
  final case class Result(commit: CommitResult, deletionFilesWritten: Long, dataFilesWritten: Long) {
    def snapshot: Snapshot = commit.snapshot
    def version: Long = snapshot.version
  }

  /**
   * The operation for `deleted` offsets (per fragment id), `newFragments` and fragments updated
   * in place (their column file of `fields` and the rows updated) on `read`: each fragment with
   * deletions gets one new deletion file holding its old and new deletions, and a fragment whose
   * rows are all gone is dropped instead; a fragment updated in place gets its column file (see
   * [[ColumnFiles]]). The operation also carries the newly deleted offsets, so that the committer
   * can rebase it onto concurrent row-level commits.
   */
  private[commit] def operation(dataset: Dataset, read: Snapshot, deleted: Map[Long, RoaringBitmap],
      newFragments: Seq[DataFragment], isDelete: Boolean, predicate: String,
      inPlace: Map[Long, (DataFile, RoaringBitmap)] = Map.empty, fields: Seq[Int] = Nil): Operation = {
    val byId = read.fragments.map(f => f.getId -> f).toMap
    val none = new RoaringBitmap()
    val ids = (deleted.collect { case (id, offsets) if !offsets.isEmpty => id } ++ inPlace.keys).toSeq.distinct.sorted
    // Each touched fragment's old deletion file is read and its new one written on a thread of
    // its own: on an object store a spread statement otherwise waits two round trips a fragment.
    val touched = Parallel.map(ids, RowLevelCommit.FileParallelism) { id =>
      val offsets = deleted.getOrElse(id, none)
      val fragment = byId.getOrElse(id, throw new LanceException(
        s"Rows of fragment $id were deleted or updated, but version ${read.version} of ${dataset.path} has no such fragment"))
      val last = if (offsets.isEmpty) -1L else Integer.toUnsignedLong(offsets.last())
      if (last >= fragment.getPhysicalRows)
        throw new LanceException(s"Row offset $last is beyond fragment $id of ${dataset.path} (${fragment.getPhysicalRows} rows)")
      val before = if (offsets.isEmpty) none else DeletionFiles.read(dataset.storage, read.files, fragment)
      (fragment, RoaringBitmap.or(before, offsets), RoaringBitmap.andNot(offsets, before))
    }
    val (emptied, partial) = touched.partition { case (f, all, _) => all.getLongCardinality == f.getPhysicalRows }
    val updated = Parallel.map(partial, RowLevelCommit.FileParallelism) { case (f, all, ours) =>
      val columns = inPlace.get(f.getId).fold(f)(c => ColumnFiles.replaced(f, c._1))
      if (ours.isEmpty) columns
      else columns.toBuilder.setDeletionFile(DeletionFiles.write(dataset.storage, dataset.path, f.getId, read.version, all)).build()
    }
    val removed = emptied.map(_._1.getId)
    val fresh = touched.collect { case (f, _, ours) if !ours.isEmpty => f.getId -> ours }.toMap
    val inPlaceRows = inPlace.collect { case (id, (_, rows)) if !removed.contains(id) => id -> rows }
    if (isDelete && newFragments.isEmpty && inPlaceRows.isEmpty) Operation.Delete(updated, removed, predicate, fresh)
    else Operation.Update(removed, updated, newFragments, fresh,
      if (inPlaceRows.isEmpty) None else Some(Operation.InPlace(fields, inPlaceRows)))
  }
}
