package sparklance.spark.streaming

import scala.jdk.CollectionConverters._
import sparklance.format.VersionRemovedException
import sparklance.format.commit.{Transactions, VersionLookup}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.table.{Dataset, Snapshot}

/**
 * What one version gives an append stream: the fragments it added, as its manifest lists them
 * (which a later delete or compaction does not change, so a replayed micro-batch reads the same
 * rows), or none.
 */
final case class VersionRows(snapshot: Snapshot, fragments: Seq[DataFragment]) {
  def version: Long = snapshot.version
}

object VersionRows {
  /**
   * How a stream of `table` reads a table's versions. `streamSchema` is the version whose schema
   * the stream reads in; `skipChangeCommits` turns a version that changed or removed rows from an
   * error into a version without rows.
   */
  final class Reader(table: String, dataset: Dataset, streamSchema: Snapshot, skipChangeCommits: Boolean) {
    /** The whole of `version` (a stream's initial snapshot): every fragment, with the deletions of that version. */
    def initial(version: Long, listing: Dataset#Listing): VersionRows = {
      val s = load(version, listing)._1
      checkSchema(s, s.fragments)
      VersionRows(s, s.fragments)
    }

    /** The rows `version` added; a version that changed none has none; one that changed or removed rows fails. */
    def added(version: Long, listing: Dataset#Listing): VersionRows = {
      val (s, txn) = load(version, listing)
      def none = VersionRows(s, Nil)
      def changed(what: String) =
        if (skipChangeCommits) none else throw new ChangeCommitException(table, version, Transactions.operationName(txn), what)
      def appended(written: Seq[DataFragment]): VersionRows = {
        // Lance assigns fragment ids at commit: the manifest's fragments are found by their data files.
        val paths = written.flatMap(_.getFilesList.asScala.map(_.getPath)).toSet
        val found = s.fragments.filter(_.getFilesList.asScala.exists(f => paths(f.getPath)))
        if (found.size != written.size) throw new UntrackedVersionException(table, version,
          s"its manifest lists ${found.size} of the ${written.size} fragments its transaction appended")
        checkSchema(s, found)
        VersionRows(s, found)
      }
      txn.getOperationCase match {
        case OperationCase.APPEND => appended(txn.getAppend.getFragmentsList.asScala.toSeq)
        // An insert-only MERGE (no row matched or none to update): rows added, none changed.
        case OperationCase.UPDATE if txn.getUpdate.getRemovedFragmentIdsCount == 0 && txn.getUpdate.getUpdatedFragmentsCount == 0 =>
          appended(txn.getUpdate.getNewFragmentsList.asScala.toSeq)
        // No row added, changed or removed: a compaction (its rows were read before), an index, config, ids reserved.
        case OperationCase.REWRITE | OperationCase.RESERVE_FRAGMENTS | OperationCase.CREATE_INDEX | OperationCase.UPDATE_CONFIG |
            OperationCase.UPDATE_MEM_WAL_STATE | OperationCase.UPDATE_BASES => none
        // pylance commits a delete that matched nothing too.
        case OperationCase.DELETE if txn.getDelete.getUpdatedFragmentsCount == 0 && txn.getDelete.getDeletedFragmentIdsCount == 0 => none
        case OperationCase.DELETE => changed("deleted rows")
        case OperationCase.UPDATE => changed("updated or deleted rows")
        case OperationCase.OVERWRITE => changed("replaced the table's rows")
        case OperationCase.RESTORE => changed(s"restored version ${txn.getRestore.getVersion}")
        case OperationCase.DATA_REPLACEMENT | OperationCase.DATA_OVERLAY => changed("rewrote column values of its rows")
        // A schema change, with or without rows added, or deleted and rewritten: a write that evolved the
        // schema (an INSERT, or a MERGE that also updated rows) is a Merge of the whole fragment list.
        case OperationCase.MERGE | OperationCase.PROJECT =>
          val before = load(version - 1, listing)._1.fragments.map(f => f.getId -> f).toMap
          val kept = s.fragments.filter(f => before.contains(f.getId))
          if (kept.size < before.size || kept.exists(f => f.getDeletionFile != before(f.getId).getDeletionFile))
            changed("changed the schema and deleted or rewrote rows")
          else {
            val added = s.fragments.filterNot(f => before.contains(f.getId))
            checkSchema(s, added)
            VersionRows(s, added)
          }
        case _ => throw new UntrackedVersionException(table, version, s"it was committed by ${Transactions.operationName(txn)}")
      }
    }

    private def load(version: Long, listing: Dataset#Listing): (Snapshot, Transaction) =
      Transactions.lookup(dataset, version, listing) match {
        case VersionLookup.Committed(s, Some(txn)) => (s, txn)
        case VersionLookup.Committed(_, None) =>
          throw new UntrackedVersionException(table, version, "its transaction (the `_transactions` file and the manifest's copy) cannot be read")
        case VersionLookup.Unreadable(e) => throw e
        case VersionLookup.Absent => throw removed(version, listing)
      }

    /** Why a version the stream reads next is gone: cleanup removed it, and the appends it held cannot be read any more. */
    private def removed(version: Long, listing: Dataset#Listing): VersionRemovedException = {
      val oldest = listing.versions.headOption.getOrElse(version)
      new VersionRemovedException(dataset.path, version, oldest, s"; the stream of $table reads version $version next. " +
        s"Nothing was skipped: to read on, start a new query (a new checkpoint location) with " +
        s"${LanceSourceOptions.StartingVersion} $oldest or later (the appends of versions $version to ${oldest - 1} are gone)")
    }

    private lazy val streamFields = ids(streamSchema)
    private def ids(s: Snapshot) = s.schema.allFields.map(f => (f.id, f.name, f.arrowType, f.nullable))

    /**
     * Rows of `s` (its `fragments`) must have a place in the stream's schema: `s` has it, or `s` is
     * older than the stream's start and lacks only nullable fields added since, which none of the
     * fragments' files lists (Lance may give a new field the id of one dropped before), so they read as NULL.
     */
    private def checkSchema(s: Snapshot, fragments: Seq[DataFragment]): Unit = {
      val fields = ids(s)
      if (s.version == streamSchema.version || fields == streamFields) return
      val added = streamFields.filterNot(fields.contains)
      val addedIds = added.map(_._1).toSet
      val additive = s.version < streamSchema.version && fields.forall(streamFields.contains) && added.forall(_._4) &&
        fragments.forall(_.getFilesList.asScala.forall(_.getFieldsList.asScala.forall(id => !addedIds(id.intValue))))
      if (!additive) throw new StreamSchemaException(table, s.version, streamSchema.version)
    }
  }
}
