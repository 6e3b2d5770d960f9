package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.commit.Transactions
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase

/**
 * One committed version as a table's history lists it. `rowsAdded` / `rowsDeleted` are None for
 * the oldest version left when cleanup removed the one before it (nothing to compare with).
 * `parameters` say what the operation did in its own terms (a compaction's groups, a restore's
 * version); `tags` name the version.
 */
final case class HistoryEntry(version: Long, commitMicros: Long, operation: String, readVersion: Option[Long],
    rowsAdded: Option[Long], rowsDeleted: Option[Long], rows: Long, parameters: Map[String, String], tags: Seq[String])

/**
 * A table's versions with what each commit did, from manifests and transactions alone: rows
 * added are the physical rows of fragments the commit created; rows deleted are the live rows
 * it removed (tombstoned, or dropped with their fragments), so an update counts in both, also
 * one made in place. A
 * compaction (Rewrite) moves rows without changing any, so it adds and deletes none.
 */
object History {
  def of(dataset: Dataset): Seq[HistoryEntry] = {
    val tagsByVersion = new Tags(dataset).list.filter(_.branch.isEmpty).groupBy(_.version).map { case (v, ts) => v -> ts.map(_.name) }
    // The version before (its snapshot and live rows, counted once); None when cleanup removed it.
    var previous: Option[(Snapshot, Long)] = None
    val listing = dataset.listing()
    listing.versions.map { v =>
      val s = listing.snapshot(v)
      val txn = Transactions.of(dataset, s)
      val rows = s.countRows(dataset.storage)
      val before = previous.filter(_._1.version == v - 1)
      val (added, deleted) =
        if (txn.exists(_.getOperationCase == OperationCase.REWRITE)) (Some(0L), Some(0L))
        else if (v == 1) (Some(s.fragments.map(_.getPhysicalRows).sum), Some(s.fragments.map(_.getPhysicalRows).sum - rows))
        else before.fold((Option.empty[Long], Option.empty[Long])) { case (b, bRows) =>
          val known = b.fragments.map(_.getId).toSet
          val added = s.fragments.filterNot(f => known.contains(f.getId)).map(_.getPhysicalRows).sum
          val inPlace = txn.fold(0L)(updatedInPlace(dataset, s, _))
          (Some(added + inPlace), Some(bRows + added - rows + inPlace))
        }
      val schemaChanges = before.map { case (b, _) => schemaParameters(b.schema, s.schema) }.getOrElse(Map.empty)
      previous = Some(s -> rows)
      HistoryEntry(v, s.commitMicros, txn.map(Transactions.operationName).getOrElse("unknown transaction"),
        txn.map(_.getReadVersion), added, deleted, rows, txn.map(parameters).getOrElse(Map.empty) ++ schemaChanges,
        tagsByVersion.getOrElse(v, Nil))
    }
  }

  /**
   * Live rows an Update rewrote in place (their columns written anew): like rows moved to new
   * fragments, each counts as deleted and added.
   */
  private def updatedInPlace(dataset: Dataset, s: Snapshot, txn: Transaction): Long =
    if (!txn.hasUpdate) 0L
    else {
      val byId = s.fragments.map(f => f.getId -> f).toMap
      txn.getUpdate.getUpdatedFragmentOffsetBitmapsMap.asScala.toSeq.map { case (id, bytes) =>
        val rows = sparklance.format.deletion.PortableBitmaps.fromBytes(bytes.toByteArray)
        byId.get(id).fold(0L)(f => org.roaringbitmap.RoaringBitmap.andNot(rows,
          sparklance.format.deletion.DeletionFiles.read(dataset.storage, s.files, f)).getLongCardinality)
      }.sum
    }

  /** How the schema changed (see [[SchemaDiff]]); nested fields by their dotted path. */
  private def schemaParameters(before: LanceSchema, after: LanceSchema): Map[String, String] = {
    import FieldChange._
    val changes = SchemaDiff.of(before, after)
    val entries = Seq(
      "columns_added" -> changes.collect { case c: Added => c.path },
      "columns_dropped" -> changes.collect { case c: Dropped => c.path },
      "columns_renamed" -> changes.collect { case c: Renamed => s"${c.path}->${c.to}" },
      "columns_retyped" -> changes.collect { case c: Retyped => c.path })
    entries.collect { case (k, v) if v.nonEmpty => k -> v.sorted.mkString(",") }.toMap
  }

  /** What the operation did, in its own terms; keys as Lance's option and field names. */
  def parameters(txn: Transaction): Map[String, String] = txn.getOperationCase match {
    case OperationCase.APPEND => Map("fragments_added" -> txn.getAppend.getFragmentsCount.toString)
    case OperationCase.DELETE =>
      val d = txn.getDelete
      Map("fragments_updated" -> d.getUpdatedFragmentsCount.toString, "fragments_removed" -> d.getDeletedFragmentIdsCount.toString) ++
        Option(d.getPredicate).filter(_.nonEmpty).map("predicate" -> _)
    case OperationCase.UPDATE =>
      val u = txn.getUpdate
      Map("fragments_updated" -> u.getUpdatedFragmentsCount.toString, "fragments_removed" -> u.getRemovedFragmentIdsCount.toString,
        "fragments_added" -> u.getNewFragmentsCount.toString,
        "update_mode" -> u.getUpdateMode.name.toLowerCase(java.util.Locale.ROOT)) ++
        (if (u.getFieldsModifiedCount == 0) Map.empty else Map("fields_modified" -> u.getFieldsModifiedList.asScala.mkString(","))) ++
        // Rows updated where they are (their columns written anew) rather than moved to new fragments.
        (if (u.getUpdatedFragmentOffsetBitmapsCount == 0) Map.empty else Map(
          "fragments_updated_in_place" -> u.getUpdatedFragmentOffsetBitmapsCount.toString,
          "rows_updated_in_place" -> u.getUpdatedFragmentOffsetBitmapsMap.values.asScala
            .map(b => sparklance.format.deletion.PortableBitmaps.fromBytes(b.toByteArray).getLongCardinality).sum.toString))
    case OperationCase.MERGE =>
      val m = txn.getMerge
      Map("fragments" -> m.getFragmentsCount.toString, "preserves_nullability" -> m.getPreservesNullability.toString)
    case OperationCase.PROJECT => Map("preserves_nullability" -> txn.getProject.getPreservesNullability.toString)
    case OperationCase.OVERWRITE => Map("fragments_added" -> txn.getOverwrite.getFragmentsCount.toString)
    case OperationCase.REWRITE =>
      val groups = txn.getRewrite.getGroupsList.asScala
      Map("groups" -> groups.size.toString,
        "fragments_removed" -> groups.map(_.getOldFragmentsCount).sum.toString,
        "fragments_added" -> groups.map(_.getNewFragmentsCount).sum.toString,
        "rows_rewritten" -> groups.flatMap(_.getNewFragmentsList.asScala).map(_.getPhysicalRows).sum.toString)
    case OperationCase.RESERVE_FRAGMENTS => Map("num_fragments" -> txn.getReserveFragments.getNumFragments.toString)
    case OperationCase.RESTORE => Map("version" -> txn.getRestore.getVersion.toString)
    case OperationCase.UPDATE_CONFIG =>
      val c = txn.getUpdateConfig
      val keys = c.getConfigUpdates.getUpdateEntriesList.asScala.map(_.getKey) ++ c.getUpsertValuesMap.keySet.asScala ++
        c.getDeleteKeysList.asScala
      Map("config_keys" -> keys.distinct.sorted.mkString(","))
    case _ => Map.empty
  }
}
