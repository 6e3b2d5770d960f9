package sparklance.format.commit

import scala.jdk.CollectionConverters._
import sparklance.format.index.Indices
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase._

/**
 * Lance's conflict resolver as one table: for the transaction we are committing and one that was
 * committed after the version ours read, keyed by the two operations, whether ours still applies.
 * It follows `conflict_resolver.rs` of Lance (the resolver pylance 14 runs), so that a table
 * shared with pylance writers sees the same outcomes whichever library commits second.
 *
 * Where Lance needs data we do not model (index bitmaps, overlay coverage), the rule answers
 * Retryable, which is never wrong, only more cautious. Isolation is not decided here: under
 * serializable isolation the committer also refuses rows added concurrently that the statement
 * could have read (see [[ReadSet]]), which Lance does not check.
 */
object ConflictRules {
  private val replacesTable = "it replaced the whole table"

  def check(ours: Transaction, theirs: Transaction): Ruling = {
    val they = theirs.getOperationCase
    if (they == OPERATION_NOT_SET)
      return Ruling.Retryable(s"it is an ${Transactions.operationName(theirs)} that this version of sparklance cannot check")
    nullabilityBarrier(ours, theirs).orElse(schemaMetadataBarrier(ours, theirs)).orElse(constraintBarrier(ours, theirs))
      .getOrElse(ours.getOperationCase match {
      case APPEND => append(they)
      case DELETE | UPDATE => rowLevel(ours, theirs)
      case OVERWRITE => overwrite(ours, theirs)
      case REWRITE => rewrite(ours, theirs)
      case RESTORE => if (they == UPDATE_MEM_WAL_STATE) incompatibleMemWal else Ruling.Compatible
      case MERGE => merge(they)
      case PROJECT => project(they)
      case UPDATE_CONFIG => updateConfig(ours, theirs)
      case RESERVE_FRAGMENTS => if (they == OVERWRITE || they == RESTORE) Ruling.Incompatible(replacesTable) else Ruling.Compatible
      case CREATE_INDEX => createIndex(ours, theirs)
      case other => throw new IllegalArgumentException(s"sparklance does not commit ${other.name()} transactions")
    })
  }

  /**
   * A write that lands with a schema change (see Operation.Evolving): `change` is the write's own
   * transaction, checked by its rules, except that the schema it extends must not have changed
   * meanwhile, and that when it retypes a column no rows may have arrived or changed without the
   * new column: their values would be held under the old field id and read as NULL. (Lance
   * records it as a Merge, which retries against any concurrent write; pylance writers committing
   * after it see that Merge.)
   */
  def checkEvolving(change: Transaction, retypes: Boolean, theirs: Transaction): Ruling = {
    val they = theirs.getOperationCase
    val schemaChanged = they match {
      case MERGE | PROJECT => true
      case UPDATE_CONFIG => changesSchemaMetadata(theirs)
      case _ => false
    }
    val wroteValues = they match {
      case APPEND | UPDATE | REWRITE | DATA_REPLACEMENT | DATA_OVERLAY => true
      case _ => false
    }
    if (they == OPERATION_NOT_SET) check(change, theirs)
    else if (schemaChanged) Ruling.Retryable("it changed the schema this statement evolves")
    else if (retypes && wroteValues)
      Ruling.Retryable("it wrote rows without the new type of the column this statement changes")
    else check(change, theirs)
  }

  private val incompatibleMemWal = Ruling.Incompatible("it changed the MemWAL state, which this commit would overwrite")

  private def append(they: OperationCase): Ruling = they match {
    case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
    case UPDATE_MEM_WAL_STATE => incompatibleMemWal
    case _ => Ruling.Compatible
  }

  /** Our Delete or Update. */
  private def rowLevel(ours: Transaction, theirs: Transaction): Ruling = {
    val mine = modifiedFragments(ours)
    def overlapping(ids: Iterable[Long], what: String): Ruling = {
      val hit = ids.filter(mine).toSeq.distinct.sorted
      if (hit.isEmpty) Ruling.Compatible else Ruling.Retryable(s"it $what fragment(s) ${hit.mkString(", ")} that we also changed")
    }
    theirs.getOperationCase match {
      case CREATE_INDEX | RESERVE_FRAGMENTS | CLONE | PROJECT | APPEND | UPDATE_CONFIG | UPDATE_BASES => Ruling.Compatible
      case DELETE | UPDATE =>
        if (modifiedFragments(theirs).exists(mine)) Ruling.MergeDeletions else Ruling.Compatible
      // Lance retries; the rows a compaction moved have exactly one new place, so ours follows them.
      case REWRITE => if (rewrittenFragments(theirs.getRewrite).exists(mine)) Ruling.ThroughRewrite else Ruling.Compatible
      case DATA_REPLACEMENT => overlapping(theirs.getDataReplacement.getReplacementsList.asScala.map(_.getFragmentId), "replaced column data of")
      // Lance lets a Delete pass an overlay (rows keep their positions) and checks an Update's
      // moved rows against the overlay's coverage, which we do not model.
      case DATA_OVERLAY if ours.getOperationCase == DELETE => Ruling.Compatible
      case DATA_OVERLAY => overlapping(theirs.getDataOverlay.getGroupsList.asScala.map(_.getFragmentId), "overlaid data on")
      case MERGE => Ruling.Retryable("it rewrote every fragment with new columns")
      case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
      case UPDATE_MEM_WAL_STATE => incompatibleMemWal
      case other => unmodelled(other)
    }
  }

  private def overwrite(ours: Transaction, theirs: Transaction): Ruling = theirs.getOperationCase match {
    case OVERWRITE =>
      if (configKeyConflict(ours, theirs)) Ruling.Incompatible("it replaced the table setting the same config keys")
      else Ruling.Retryable("it replaced the table too")
    case UPDATE_CONFIG if configKeyConflict(ours, theirs) => Ruling.Incompatible("it changed config keys this overwrite sets")
    case UPDATE_MEM_WAL_STATE => incompatibleMemWal
    case _ => Ruling.Compatible
  }

  /** Our compaction. An index change elsewhere passes: the committer derives the new index section from the latest version. */
  private def rewrite(ours: Transaction, theirs: Transaction): Ruling = {
    val mine = rewrittenFragments(ours.getRewrite).toSet
    def overlapping(ids: Iterable[Long], what: String): Ruling =
      if (ids.exists(mine)) Ruling.Retryable(s"it $what fragments this compaction rewrites") else Ruling.Compatible
    theirs.getOperationCase match {
      case APPEND | RESERVE_FRAGMENTS | PROJECT | CLONE | UPDATE_CONFIG | UPDATE_MEM_WAL_STATE | UPDATE_BASES => Ruling.Compatible
      case DELETE | UPDATE => overlapping(modifiedFragments(theirs), "changed rows of")
      case REWRITE => overlapping(rewrittenFragments(theirs.getRewrite), "compacted")
      case DATA_REPLACEMENT => overlapping(theirs.getDataReplacement.getReplacementsList.asScala.map(_.getFragmentId), "replaced column data of")
      case DATA_OVERLAY => overlapping(theirs.getDataOverlay.getGroupsList.asScala.map(_.getFragmentId), "overlaid data on")
      // Lance's rule: an index built meanwhile over fragments we rewrite was built on their old rows.
      case CREATE_INDEX =>
        val covering = theirs.getCreateIndex.getNewIndicesList.asScala
          .filter(i => Indices.coverage(i).forall(c => mine.exists(id => c.contains(id.toInt))))
        if (covering.isEmpty) Ruling.Compatible
        else Ruling.Retryable(s"it built index ${covering.map(_.getName).distinct.mkString(", ")} over fragments this compaction rewrites")
      case MERGE => Ruling.Retryable("it rewrote every fragment with new columns")
      case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
      case other => unmodelled(other)
    }
  }

  /**
   * Our index change. New rows and deletions leave an index built on the version read correct
   * (new fragments are simply not covered; deleted rows only widen zones); a change to the
   * indexed values of fragments it covers (compaction, column rewrites) or to the same index
   * means building it again.
   */
  private def createIndex(ours: Transaction, theirs: Transaction): Ruling = {
    val mine = ours.getCreateIndex
    val indices = mine.getNewIndicesList.asScala ++ mine.getRemovedIndicesList.asScala
    val fields = indices.flatMap(_.getFieldsList.asScala.map(_.intValue)).toSet
    theirs.getOperationCase match {
      case APPEND | DELETE | RESERVE_FRAGMENTS | UPDATE_CONFIG | CLONE | UPDATE_BASES => Ruling.Compatible
      case UPDATE =>
        if (theirs.getUpdate.getFieldsModifiedList.asScala.exists(f => fields(f.intValue)))
          Ruling.Retryable("it rewrote values of the indexed column")
        else Ruling.Compatible
      case CREATE_INDEX =>
        val names = indices.map(_.getName).toSet
        val theirIndices = theirs.getCreateIndex.getNewIndicesList.asScala ++ theirs.getCreateIndex.getRemovedIndicesList.asScala
        if (theirIndices.exists(i => names(i.getName))) Ruling.Retryable("it changed the same index")
        else Ruling.Compatible
      case REWRITE | DATA_REPLACEMENT | DATA_OVERLAY | MERGE | PROJECT =>
        Ruling.Retryable("it rewrote fragments or columns the index describes")
      case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
      case UPDATE_MEM_WAL_STATE => incompatibleMemWal
      case other => unmodelled(other)
    }
  }

  /** Our Merge (columns added to every fragment). */
  private def merge(they: OperationCase): Ruling = they match {
    case RESERVE_FRAGMENTS | CLONE | UPDATE_CONFIG | UPDATE_BASES => Ruling.Compatible
    // Lance retries only for a MemWAL index, which we cannot tell from the others.
    case CREATE_INDEX => Ruling.Retryable("it changed the indices")
    case APPEND | DELETE | UPDATE | REWRITE | MERGE | DATA_REPLACEMENT | DATA_OVERLAY =>
      Ruling.Retryable("it changed fragments whose columns this commit rewrites")
    case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
    case PROJECT => Ruling.Incompatible("it changed the schema this commit extends")
    case UPDATE_MEM_WAL_STATE => incompatibleMemWal
    case other => unmodelled(other)
  }

  /** Our Project (columns dropped, renamed or their metadata changed). */
  private def project(they: OperationCase): Ruling = they match {
    case MERGE | PROJECT => Ruling.Retryable("it changed the schema too")
    case OVERWRITE | RESTORE => Ruling.Incompatible(replacesTable)
    case UPDATE_MEM_WAL_STATE => incompatibleMemWal
    case _ => Ruling.Compatible
  }

  private def updateConfig(ours: Transaction, theirs: Transaction): Ruling = theirs.getOperationCase match {
    case OVERWRITE =>
      val mine = ours.getUpdateConfig
      if (mine.hasSchemaMetadataUpdates || mine.getFieldMetadataUpdatesCount > 0 || configKeyConflict(ours, theirs))
        Ruling.Incompatible("it replaced the table and its config")
      else Ruling.Compatible
    case UPDATE_CONFIG if configKeyConflict(ours, theirs) || sameMetadata(ours.getUpdateConfig, theirs.getUpdateConfig) =>
      Ruling.Incompatible("it changed the same config or metadata keys")
    case _ => Ruling.Compatible
  }

  private def unmodelled(they: OperationCase): Ruling =
    Ruling.Retryable(s"sparklance has no rule for a concurrent ${they.name()}")

  /**
   * Lance's first barrier, in both directions: a Project or Merge that may make a column
   * non-nullable cannot pass a commit that wrote values, which might be the nulls it forbids.
   */
  private def nullabilityBarrier(ours: Transaction, theirs: Transaction): Option[Ruling] = {
    def mayAlterNullability(t: Transaction) =
      (t.hasProject && !t.getProject.getPreservesNullability) || (t.hasMerge && !t.getMerge.getPreservesNullability)
    def suppliesValues(t: Transaction) = t.hasAppend || t.hasUpdate || t.hasDataReplacement || t.hasDataOverlay
    if ((mayAlterNullability(ours) && suppliesValues(theirs)) || (suppliesValues(ours) && mayAlterNullability(theirs)))
      Some(Ruling.Retryable("one changes column nullability while the other wrote values"))
    else None
  }

  /**
   * sparklance's barrier (Lance has no CHECK constraints): a commit that writes values cannot pass
   * one that added a CHECK constraint, since its rows were checked against the constraints of the
   * version it read only. It retries, and the statement run again checks them. (The commit adding
   * a constraint checks the rows that landed before it itself: see ReadSet.)
   */
  private def constraintBarrier(ours: Transaction, theirs: Transaction): Option[Ruling] = {
    val added = WriteConstraints.added(theirs)
    val writesValues = ours.hasAppend || ours.hasUpdate || ours.hasDataReplacement || ours.hasDataOverlay ||
      (ours.hasOverwrite && ours.getOverwrite.getFragmentsCount > 0)
    if (added.nonEmpty && writesValues && !theirs.hasOverwrite)
      Some(Ruling.Retryable(s"it added CHECK constraint(s) ${added.mkString(", ")}, which the rows of this commit were " +
        "not checked against"))
    else None
  }

  /** Lance's second barrier, in both directions: a Merge cannot pass a change of schema or field metadata. */
  private def schemaMetadataBarrier(ours: Transaction, theirs: Transaction): Option[Ruling] = {
    if ((ours.hasMerge && changesSchemaMetadata(theirs)) || (changesSchemaMetadata(ours) && theirs.hasMerge))
      Some(Ruling.Retryable("one adds columns while the other changed schema or field metadata"))
    else None
  }

  /** Whether an UpdateConfig changes schema or field metadata. */
  private def changesSchemaMetadata(t: Transaction): Boolean = t.hasUpdateConfig && {
    val c = t.getUpdateConfig
    def touches(m: Transaction.UpdateMap) = m.getReplace || m.getUpdateEntriesCount > 0
    (c.hasSchemaMetadataUpdates && touches(c.getSchemaMetadataUpdates)) ||
      c.getFieldMetadataUpdatesMap.values().asScala.exists(touches)
  }

  /** The fragments a transaction changes in place or removes (Lance's `modified_fragment_ids`). */
  private def modifiedFragments(t: Transaction): Set[Long] = t.getOperationCase match {
    case DELETE => (t.getDelete.getUpdatedFragmentsList.asScala.map(_.getId) ++
      t.getDelete.getDeletedFragmentIdsList.asScala.map(_.toLong)).toSet
    case UPDATE => (t.getUpdate.getUpdatedFragmentsList.asScala.map(_.getId) ++
      t.getUpdate.getRemovedFragmentIdsList.asScala.map(_.toLong)).toSet
    case REWRITE => rewrittenFragments(t.getRewrite).toSet
    case _ => Set.empty
  }

  private def rewrittenFragments(r: Transaction.Rewrite): Seq[Long] =
    (r.getOldFragmentsList.asScala ++ r.getGroupsList.asScala.flatMap(_.getOldFragmentsList.asScala)).map(_.getId).toSeq

  /** Config keys one side sets that the other sets or removes (Lance's `upsert_key_conflict`). */
  private def configKeyConflict(a: Transaction, b: Transaction): Boolean = {
    val (setA, removedA) = configKeys(a)
    val (setB, removedB) = configKeys(b)
    (setA & (setB | removedB)).nonEmpty || (setB & removedA).nonEmpty
  }

  /** The config keys a transaction sets and those it removes. */
  private def configKeys(t: Transaction): (Set[String], Set[String]) =
    if (t.hasOverwrite) (t.getOverwrite.getConfigUpsertValuesMap.keySet().asScala.toSet, Set.empty)
    else if (t.hasUpdateConfig) {
      val c = t.getUpdateConfig
      val (set, removed) = c.getConfigUpdates.getUpdateEntriesList.asScala.partition(_.hasValue)
      (set.map(_.getKey).toSet ++ c.getUpsertValuesMap.keySet().asScala, removed.map(_.getKey).toSet ++ c.getDeleteKeysList.asScala)
    } else (Set.empty, Set.empty)

  /** Lance's `modifies_same_metadata`: both change table metadata keys, schema metadata, or one field's metadata. */
  private def sameMetadata(a: Transaction.UpdateConfig, b: Transaction.UpdateConfig): Boolean = {
    val (ta, tb) = (a.getTableMetadataUpdates, b.getTableMetadataUpdates)
    val tableClash = (a.hasTableMetadataUpdates && b.hasTableMetadataUpdates) && (ta.getReplace || tb.getReplace ||
      (ta.getUpdateEntriesList.asScala.map(_.getKey).toSet & tb.getUpdateEntriesList.asScala.map(_.getKey).toSet).nonEmpty)
    val schemaClash = a.hasSchemaMetadataUpdates && b.hasSchemaMetadataUpdates
    val fieldClash = (a.getFieldMetadataUpdatesMap.keySet().asScala & b.getFieldMetadataUpdatesMap.keySet().asScala).nonEmpty
    tableClash || schemaClash || fieldClash
  }
}
