package sparklance.format.commit

import com.google.protobuf.Timestamp
import java.time.Instant
import java.util.UUID
import java.util.concurrent.ThreadLocalRandom
import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.util.control.NonFatal
import sparklance.format.{BuildInfo, CommitConflictException, CommitStateUnknownException, LanceException, TableNotFoundException,
  TxnAlreadyAppliedException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.{FragmentReuse, Indices, RewriteIndexRules}
import sparklance.format.io.{Background, Storage}
import sparklance.format.rowids.RowLineage
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile, IndexMetadata, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table._

/**
 * Turns an operation into the next version: writes the transaction file, builds the manifest
 * from the version it read, and publishes it with put-if-absent. Losing the race makes it read
 * back every version committed since and check ours against each with [[ConflictRules]] (and,
 * under serializable isolation, against the rows each added that the statement's [[ReadSet]]
 * could have read); then it either rebases onto the latest version and retries, or fails with
 * CommitConflictException, leaving the table untouched. A retry first checks whether an earlier
 * attempt of ours landed after all (its manifest names our transaction) and then returns that
 * version. Every version committed since the last look is checked and rebased over in one round,
 * so a writer that keeps losing only catches up on what is new; it gives up after [[CommitRetries]].
 *
 * What a commit guarantees its caller: it returns the version that holds it, or throws. A
 * CommitStateUnknownException means a manifest of ours may exist or appear later (a put failed,
 * and no other writer holds that version yet): every file the commit wrote must be kept. Any other
 * exception it throws means no manifest of ours exists or ever will, so its files may go.
 */
final class Committer(dataset: Dataset, retries: CommitRetries = CommitRetries(), isolation: Isolation = Isolation.Serializable) {
  private val storage = dataset.storage

  /**
   * `read` is the snapshot the operation was planned against (None when creating the table);
   * `reads` what the statement read of it, which matters under serializable isolation only (None:
   * a Delete or Update read every row, anything else read nothing).
   */
  def commit(read: Option[Snapshot], op: Operation, properties: Map[String, String] = Map.empty,
      reads: Option[ReadSet] = None, indexing: Option[NewFragmentIndices] = None,
      record: Option[CommitRecord] = None, appTxn: Option[TxnMarker] = None, claim: Option[MetadataClaim] = None): CommitResult = commitRecorded(read, op,
    properties ++ record.fold(Map.empty[String, String])(_.properties) ++ appTxn.fold(Map.empty[String, String])(_.properties),
    reads, indexing, appTxn, claim)

  /**
   * [[commit]] with the statement's record already among the transaction's `properties`. With an
   * `appTxn`, a table that already holds that transaction of the same application (or a later
   * one), before the first attempt or in a concurrent winner, ends the commit with
   * TxnAlreadyAppliedException instead of a commit or a rebase: the same write, by an earlier
   * attempt, a restarted query or a zombie of it, must not land twice.
   */
  private def commitRecorded(read: Option[Snapshot], op: Operation, properties: Map[String, String],
      reads: Option[ReadSet], indexing: Option[NewFragmentIndices], appTxn: Option[TxnMarker],
      claim: Option[MetadataClaim]): CommitResult = {
    read.foreach(s => FeatureFlags.check(s.tablePath, s.version, s.manifest.getReaderFeatureFlags,
      s.manifest.getWriterFeatureFlags, forWrite = true))
    // A legacy (V1) dictionary column's items live in the manifest file itself (its dictionary's
    // offset and length), which sparklance does not carry into the manifests it writes: pylance
    // would read the column's values as empty strings after any commit. Refused, naming the column.
    read.foreach(s => s.schema.allFields.find(_.storedDictionary.exists(_.getLength != 0)).foreach { f =>
      throw new sparklance.format.UnsupportedFeatureException(s"Table ${s.tablePath} has the legacy-format dictionary " +
        s"column '${f.name}', whose items are kept in the table's manifest; sparklance does not write them into new " +
        "manifests, so it does not change this table (copy it into one of data_storage_version 2.0 or later)")
    })
    appTxn.foreach(AppTxnLookup.requireNew(dataset, _, dataset.snapshot(forWrite = true)))
    val pending = op match { case e: Operation.Evolving => Some(e.pending); case _ => None }
    pending.foreach(p => require(read.contains(p.base), "a write that changes the schema is committed on the version its change was planned on"))
    val statementReads = reads.getOrElse(ReadSet.assumedFor(Committer.changeOf(op)))
    val readVersion = read.map(_.version).getOrElse(0L)
    val uuid = UUID.randomUUID().toString
    val started = System.nanoTime()
    // Checked against concurrent commits: the operation, or the write that carries a schema change.
    var txn = Transactions.build(readVersion, uuid, Committer.changeOf(op), properties)
    var txnName = s"$readVersion-$uuid.txn"
    // The transaction file: a schema change's Merge names the final fragment list, so it is written
    // with each manifest; any other once, here, while the attempt is built and the look for newer
    // versions lists them (side by side on an object store). The manifest names it: no manifest is
    // put before it is there.
    var txnWrite: Option[Background[Unit]] = Option.when(pending.isEmpty) {
      val (name, first) = (txnName, txn)
      storage.inBackground(transactionPath(name))(() => writeTransaction(name, first))
    }
    val ourTransactionFiles = scala.collection.mutable.Set(txnName)

    var current = op
    var base = read
    var attempt = 0
    var storeFailures = 0
    // The segments built for the attempt under way (see NewFragmentIndices).
    var attemptSegments = Seq.empty[IndexMetadata]
    val ownFiles = scala.collection.mutable.ArrayBuffer.empty[(Long, DeletionFile)] // deletion files written by rebases
    // Once a put failed, a manifest of ours naming what the attempts wrote may exist: nothing is deleted any more.
    var keepWritten = false
    // A failed put of a version no one holds yet: it may still land, so the outcome stays unknown.
    var unsettled = Option.empty[(Long, Throwable)]
    def unknown(version: Long, cause: Throwable): Nothing = throw new CommitStateUnknownException(dataset.path, version, cause)
    def conflict(version: Long, theirs: Option[Transaction], detail: String, retryable: Boolean = true): Nothing = {
      unsettled.foreach { case (v, e) => unknown(v, e) }
      if (!keepWritten) dropDeletionFiles(ownFiles.toSeq)
      val other = theirs.fold("commit")(Transactions.operationName)
      val advice = if (retryable) "re-run the statement" else "check the table's new contents before re-running the statement"
      throw new CommitConflictException(dataset.path, version,
        s"our ${op.name} (read version $readVersion) conflicts with the $other committed as version $version: " +
          s"$detail; the table is unchanged, $advice", retryable)
    }
    def alreadyApplied(marker: TxnMarker, version: Long, applied: Long): Nothing = {
      unsettled.foreach { case (v, e) => unknown(v, e) }
      if (!keepWritten) dropDeletionFiles(ownFiles.toSeq)
      throw new TxnAlreadyAppliedException(dataset.path, marker.appId, marker.version, version, applied)
    }
    try while (true) {
      val naming = base.map(_.naming).getOrElse(VersionNaming.V2)
      if (pending.isDefined) { txnName = s"${base.get.version}-$uuid.txn"; ourTransactionFiles += txnName }
      val manifest = nextManifest(base, current, txnName, appTxn, claim)
      val version = manifest.getVersion
      // The look for newer versions (below) lists them while the attempt's index segments are written.
      val newer = storage.inBackground(Storage.join(dataset.path, "_versions"))(() => newerExists(version))
      // The attempt before was refused for certain (or none failed): nothing names its segments.
      if (!keepWritten) indexing.foreach(_.discard(attemptSegments))
      val landing = indexing.map { i =>
        val change = Committer.changeOf(current)
        val fresh = Committer.newFragments(change)
        // A compaction's fragments come with their reserved ids; others get theirs, in order, at the end.
        val ids = change match {
          case _: Operation.Rewrite => fresh.map(_.getId)
          case _ => manifest.getFragmentsList.asScala.toSeq.takeRight(fresh.size).map(_.getId)
        }
        i.landing(ids, base, Indices.parse(indexSectionAfter(base, current), dataset.path),
          manifest.getFragmentsList.asScala.map(_.getId).toSet)
      }
      attemptSegments = landing.toSeq.flatMap(_.added)
      val index =
        if (landing.forall(l => l.added.isEmpty && l.replaced.isEmpty)) indexSectionAfter(base, current)
        else {
          val replaced = landing.get.replaced.map(Indices.directory).toSet
          Some(Indices.encode(Indices.parse(indexSectionAfter(base, current), dataset.path)
            .filterNot(i => replaced(Indices.directory(i))) ++ attemptSegments))
        }
      val recorded = pending.fold(txn) { p =>
        val merge = Transactions.build(base.get.version, uuid,
          Operation.Merge(manifest.getFragmentsList.asScala.toSeq, p.schema, p.preservesNullability), properties)
        writeTransaction(txnName, merge, replace = true)
        merge
      }
      val bytes = ManifestFile.encode(manifest, index, Some(recorded))
      val target = Storage.join(dataset.path, s"_versions/${naming.fileName(version)}")
      // Cleanup removes old manifests, so with a stale base the put of a version below the newest
      // could succeed and leave a dead branch no reader follows: look first, and lose the race.
      val put: PutOutcome = if (newer.result) PutOutcome.Superseded
        else {
          txnWrite.foreach(_.result)
          txnWrite = None
          try { if (storage.putIfAbsent(target, bytes)) PutOutcome.Landed else PutOutcome.Taken }
          catch { case NonFatal(e) => PutOutcome.Failed(e) }
        }
      put match {
        case PutOutcome.Landed =>
          // The hint is written while the check lists the versions; should the check find ours an
          // orphan, the hint names a version ahead of the table's, which readers never trust.
          val hint = storage.inBackground(hintPath)(() => writeHint(version))
          val verdict = OrphanCheck.verdict(dataset, naming, version, manifest, base.map(_.manifest))
          hint.result
          verdict match {
            case OrphanCheck.Newest | OrphanCheck.Live =>
              return CommitResult(Snapshot(dataset.path, naming, ManifestFile(manifest, index)), newest = verdict == OrphanCheck.Newest)
            // The look before the put and the put itself let another commit and a cleanup in between.
            case OrphanCheck.Orphan =>
              try storage.delete(target) catch { case NonFatal(e) => unknown(version, e) }
            case OrphanCheck.Undecided => unknown(version, new IllegalStateException(s"version $version landed, but newer " +
              "versions of the same time exist and nothing tells whether they were built on it"))
          }
        case PutOutcome.Failed(_) => keepWritten = true
        case _ =>
      }
      val failed = put match { case PutOutcome.Failed(e) => Some(e); case _ => None }
      // After a put that may have written the manifest, a failure to read the table back leaves
      // the outcome unknown; after a definite "exists", it is an ordinary error.
      def unknownIfUncertain[T](step: => T): T = try step catch {
        case NonFatal(e) if failed.isDefined => unknown(version, e)
      }
      val creating = base.isEmpty && !unknownIfUncertain(dataset.exists)
      if (creating) {
        // Creating the table and the store failed before anything landed (as far as we can see): the same put again.
        unsettled = failed.map(version -> _)
        if (attempt >= retries.count) failed match {
          case Some(e) => unknown(version, e)
          case None => throw new IllegalStateException(s"cannot create $target")
        }
      } else {
        // One listing for the latest version and every version since ours: no request per name to ask if it exists.
        val listing = unknownIfUncertain(dataset.listing())
        val latest = unknownIfUncertain(listing.snapshot(listing.versions.lastOption.getOrElse(throw new TableNotFoundException(dataset.path))))
        val firstNew = base.fold(1L)(_.version + 1)
        val newer = (firstNew to latest.version).map(v => v -> Transactions.lookup(dataset, v, listing))
        val ours = newer.collectFirst { case (_, VersionLookup.Committed(s, t))
          if ourTransactionFiles(s.manifest.getTransactionFile) || t.exists(_.getUuid == uuid) => s }
        if (ours.isDefined) {
          writeHint(latest.version)
          return CommitResult(ours.get)
        }
        newer.collectFirst { case (v, VersionLookup.Unreadable(e)) if v == version && failed.isDefined => unknown(version, e) }
        for (marker <- appTxn) {
          newer.collectFirst { case (v, VersionLookup.Committed(_, Some(t))) if TxnMarker.versionIn(t, marker.appId).exists(marker.coveredBy) =>
            alreadyApplied(marker, v, TxnMarker.versionIn(t, marker.appId).get)
          }
          TxnMarker.watermarkIn(latest.manifest, marker.appId).filter(marker.coveredBy)
            .foreach(alreadyApplied(marker, latest.version, _))
        }
        // A failed put of a version another writer now holds can never land; one of a version no
        // one holds is the store's error, not a race. A few of those, and the outcome is unknown.
        unsettled = failed.filter(_ => latest.version < version).map(version -> _)
        unsettled.foreach { case (_, e) =>
          storeFailures += 1
          if (storeFailures >= Committer.StoreAttempts) unknown(version, e)
        }
        FeatureFlags.check(latest.tablePath, latest.version, latest.manifest.getReaderFeatureFlags,
          latest.manifest.getWriterFeatureFlags, forWrite = true)
        // A claimed table metadata value someone else changed after the version it was read in:
        // what the statement wrote depends on it (identity values), so it must not land.
        for (c <- claim; (v, VersionLookup.Committed(s, t)) <- newer if v > c.since; why <- c.movedIn(s.manifest))
          conflict(v, t, why, true)
        // Lance lets new data land after a concurrent type change, where its old field id no longer
        // names the column and the values read as NULL; we retry instead.
        read.foreach { r =>
          val lost = Committer.superseded(current, r.schema, latest.schema)
          if (lost.nonEmpty) conflict(latest.version, None, s"the type of ${lost.mkString(", ")} changed meanwhile, so the values " +
            "written for the old type would read as NULL", true)
        }
        if (!retries.allowAnother(attempt, started))
          conflict(latest.version, newer.lastOption.flatMap(_._2 match { case VersionLookup.Committed(_, t) => t; case _ => None }),
            s"gave up after ${retries.describe} of retries against concurrent commits (each lost to a newer version)")
        def adopt(rebased: RowLevelRebase.Rebased, readVersion: Long): Unit = if (rebased.op ne Committer.changeOf(current)) {
          val stillLive = live(rebased.op).toSet
          val superseded = ownFiles.filterNot(stillLive)
          if (!keepWritten) dropDeletionFiles(superseded.toSeq)
          ownFiles --= superseded
          ownFiles ++= rebased.written
          current = current match { case e: Operation.Evolving => e.copy(change = rebased.op); case _ => rebased.op }
          txn = Transactions.build(readVersion, uuid, rebased.op, properties)
          if (pending.isEmpty) {
            // The first transaction file, if it is still to be written, is not needed any more.
            txnWrite.foreach(_.cancel())
            txnWrite = None
            txnName = s"$readVersion-$uuid.txn"
            writeTransaction(txnName, txn); ourTransactionFiles += txnName
          }
        }
        // Every version since ours is checked and rebased over in this one round, compactions
        // included: a compaction of fragments we change stops the check there, our change is
        // rebased onto the version before it and carried through it, and the check goes on after it.
        var from = base
        var unchecked: Seq[(Long, VersionLookup)] = newer
        while (unchecked.nonEmpty) {
          val (touching, compaction) = check(txn, pending, from, unchecked, statementReads, conflict)
          val upTo = compaction.fold(latest) { c =>
            unchecked.collectFirst { case (v, VersionLookup.Committed(s, _)) if v == c.version - 1 => s }.getOrElse(from.get)
          }
          Committer.changeOf(current) match {
            // A compaction moved the rows of a fragment whose columns we rewrite: our file no longer matches them.
            case u: Operation.Update if u.inPlace.isDefined && compaction.isDefined =>
              conflict(compaction.get.version, Some(compaction.get.txn), "it compacted fragments whose columns this commit rewrites")
            case change @ (_: Operation.Delete | _: Operation.Update) if from.isDefined =>
              adopt(RowLevelRebase.rebase(dataset, change, from.get, upTo, touching, conflict(_, _, _)), upTo.version)
              compaction.foreach { c =>
                adopt(RewriteTranslation.translate(dataset, Committer.changeOf(current), c.txn.getRewrite, c.version, c.snapshot,
                  conflict(_, _, _), c.txn), c.version)
              }
            case _ =>
          }
          from = compaction.map(_.snapshot).orElse(Some(latest))
          unchecked = compaction.fold(Seq.empty[(Long, VersionLookup)])(c => unchecked.filter(_._1 > c.version))
        }
        base = Some(latest)
      }
      attempt += 1
      // Losing to versions that landed while we rebased needs no pause: the next round catches up
      // on those alone. A collision at the put, or a store failure, spreads the writers out.
      if (put != PutOutcome.Superseded) backoff(attempt)
    } catch {
      case e: CommitStateUnknownException => throw e
      case NonFatal(e) if unsettled.isDefined => unknown(unsettled.get._1, e)
    }
    throw new IllegalStateException("unreachable")
  }

  /**
   * Checks our transaction against each version committed after `base` (in order: the first
   * conflict wins) and returns those whose row-level changes ours must be rebased over, up to a
   * compaction ours must be carried through, where it stops.
   */
  private def check(ours: Transaction, pending: Option[PendingSchema], base: Option[Snapshot], newer: Seq[(Long, VersionLookup)], reads: ReadSet,
      conflict: (Long, Option[Transaction], String, Boolean) => Nothing): (Seq[(Long, Transaction)], Option[Committer.CompactedUnder]) = {
    var previous = base.map(_.manifest).getOrElse(Manifest.getDefaultInstance)
    val touching = Seq.newBuilder[(Long, Transaction)]
    for ((v, lookup) <- newer) lookup match {
      case VersionLookup.Absent =>
        conflict(v, None, "its manifest vanished while we read it (a concurrent cleanup?)", true)
      case VersionLookup.Unreadable(e) =>
        conflict(v, None, s"its manifest cannot be read (${e.getMessage}), so the commits cannot be reconciled", true)
      case VersionLookup.Committed(_, None) =>
        conflict(v, None, "its transaction cannot be read, so the commits cannot be reconciled", true)
      case VersionLookup.Committed(snapshot, Some(theirs)) =>
        val ruling = pending.fold(ConflictRules.check(ours, theirs))(p => ConflictRules.checkEvolving(ours, p.retypes, theirs))
        ruling match {
          case Ruling.Retryable(reason) => conflict(v, Some(theirs), reason, true)
          case Ruling.Incompatible(reason) => conflict(v, Some(theirs), reason, false)
          case _ =>
        }
        if (isolation == Isolation.Serializable) {
          val added = ConcurrentRows.added(previous, snapshot.manifest, theirs.getOperationCase)
          // Rows that cannot be checked count as read: the cautious answer is never wrong.
          val unchecked = try { if (added.nonEmpty && reads.mayHaveRead(snapshot, added)) Some("") else None }
            catch { case NonFatal(e) => Some(s" (they could not be checked: ${e.getMessage})") }
          unchecked.foreach { why =>
            val ids = added.map(_.getId)
            conflict(v, Some(theirs), s"it added or changed rows (in fragment(s) ${ids.take(10).mkString(", ")}" +
              s"${if (ids.size > 10) s" and ${ids.size - 10} more" else ""}) that this statement never saw and might have " +
              s"matched$why (serializable isolation; with the table property or statement option ${Isolation.Key} = " +
              s"'${Isolation.Snapshot.name}' the statement applies to the rows it read)", true)
          }
        }
        previous = snapshot.manifest
        if (ruling == Ruling.MergeDeletions) touching += v -> theirs
        if (ruling == Ruling.ThroughRewrite) return (touching.result(), Some(Committer.CompactedUnder(v, theirs, snapshot)))
    }
    (touching.result(), None)
  }

  private def transactionPath(name: String): String = Storage.join(dataset.path, s"_transactions/$name")

  private def writeTransaction(name: String, txn: Transaction, replace: Boolean = false): Unit = {
    val path = transactionPath(name)
    if (replace) storage.overwrite(path, txn.toByteArray)
    else Using.resource(storage.create(path))(_.write(txn.toByteArray))
  }

  /** Whether a version above `version` exists (one that cannot be read counts as not: the put then decides). */
  private def newerExists(version: Long): Boolean =
    try dataset.versions.lastOption.exists(_ > version) catch { case NonFatal(_) => false }

  private def hintPath: String = Storage.join(dataset.path, "_versions/latest_version_hint.json")

  /** The hint is only a hint: failing to write it must not turn a landed commit into an error. */
  private def writeHint(version: Long): Unit =
    try storage.overwrite(hintPath, s"""{"version":$version}""".getBytes("UTF-8"))
    catch { case NonFatal(_) => }

  /** The deletion files an operation's updated fragments reference. */
  private def live(op: Operation): Seq[(Long, DeletionFile)] = (Committer.changeOf(op) match {
    case d: Operation.Delete => d.updated
    case u: Operation.Update => u.updated
    case _ => Nil
  }).filter(_.hasDeletionFile).map(f => f.getId -> f.getDeletionFile)

  /** Best effort: files only we ever referenced, in manifests that never landed (the caller made sure). */
  private def dropDeletionFiles(files: Seq[(Long, DeletionFile)]): Unit = files.foreach { case (id, f) =>
    try storage.delete(Storage.join(dataset.path, DeletionFiles.relativePath(id, f))) catch { case NonFatal(_) => }
  }

  /** A short randomized pause, growing with the attempt, so racing writers spread out. */
  private def backoff(attempt: Int): Unit = {
    val ceiling = math.min(5L << math.min(attempt, 6), 250L)
    Thread.sleep(ThreadLocalRandom.current().nextLong(1L, ceiling + 1))
  }

  private def nextManifest(base: Option[Snapshot], op: Operation, txnName: String, appTxn: Option[TxnMarker],
      claim: Option[MetadataClaim] = None): Manifest = {
    val prev = base.map(_.manifest).getOrElse(Manifest.getDefaultInstance)
    val b = prev.toBuilder
      .setVersion(prev.getVersion + 1)
      .clearTag().clearVersionAuxData()
      .setTimestamp(now())
      .setTransactionFile(txnName)
      .setWriterVersion(Manifest.WriterVersion.newBuilder().setLibrary("sparklance").setVersion(BuildInfo.version))
    var nextId = if (prev.hasMaxFragmentId) Integer.toUnsignedLong(prev.getMaxFragmentId) + 1 else 0L
    val stable = op match {
      case Operation.Overwrite(_, _, _, Some(choice), _) => choice
      case Operation.Restore(target) => target.stableRowIds // a REPLACE since may have chosen otherwise
      case _ => (prev.getReaderFeatureFlags & FeatureFlags.StableRowIds) != 0
    }
    // Row ids are never reused, not even across an Overwrite: indices may still name old ones.
    var nextRowId = prev.getNextRowId
    def assign(fs: Seq[DataFragment]): Seq[DataFragment] = fs.map { f =>
      val withId = f.toBuilder.setId(nextId).build(); nextId += 1
      if (!stable) RowLineage.strip(withId)
      else { val (lined, next) = RowLineage.assign(withId, nextRowId, prev.getVersion + 1); nextRowId = next; lined }
    }
    val existing = prev.getFragmentsList.asScala.toSeq
    def after(op: Operation): Seq[DataFragment] = op match {
      case Operation.Append(fs) => existing ++ assign(fs)
      case Operation.Overwrite(fs, schema, config, definesTable, metadata) =>
        // CREATE / REPLACE define a new table (stableRowIds is set): it keeps none of the old
        // table's config or metadata. INSERT OVERWRITE replaces rows only and upserts the given keys.
        if (definesTable.isDefined) b.clearConfig().clearTableMetadata().putAllTableMetadata(metadata.asJava)
        b.clearFields().addAllFields(schema.toProto.asJava)
          .clearSchemaMetadata().putAllSchemaMetadata(schema.metadataProto)
          .putAllConfig(config.asJava)
          .setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance")
            .setVersion(config.getOrElse(Committer.StorageVersionKey, dataFormat(prev))))
        assign(fs)
      case Operation.Delete(updated, deletedIds, _, _) => replace(existing, updated, deletedIds)
      case Operation.Update(removedIds, updated, newFragments, _, inPlace) =>
        val version = prev.getVersion + 1
        // Rows updated in place were last updated by this commit.
        val stamped = updated.map(f => inPlace.flatMap(_.rows.get(f.getId)) match {
          case Some(rows) if stable => RowLineage.updatedAt(storage, dataset.path, f, rows, version)
          case Some(_) => RowLineage.strip(f)
          case None => f
        })
        replace(existing, stamped, removedIds) ++ assign(newFragments)
      case Operation.ReserveFragments(n) => nextId += n; existing
      case _: Operation.CreateIndex => existing
      case Operation.Rewrite(groups) => splice(existing, groups, stable)
      case Operation.Merge(fs, schema, _) =>
        b.clearFields().addAllFields(schema.toProto.asJava)
        val before = existing.map(f => f.getId -> f).toMap
        val unknown = fs.map(_.getId).filterNot(before.contains)
        if (unknown.nonEmpty) throw new LanceException(s"Merge into ${dataset.path} names fragments ${unknown.mkString(", ")} it does not have")
        // Lance stamps every row of a fragment that got new column data as updated by this commit.
        fs.map(f => if (stable && before(f.getId).getFilesList != f.getFilesList) RowLineage.touched(f, prev.getVersion + 1) else f)
          .map(withFilesOf(schema, _))
      case Operation.Project(schema, _) =>
        b.clearFields().addAllFields(schema.toProto.asJava)
        existing.map(withFilesOf(schema, _))
      case Operation.UpdateConfig(config, removedConfig, metadata, removedMetadata) =>
        b.putAllConfig(config.asJava)
        removedConfig.foreach(b.removeConfig)
        b.putAllTableMetadata(metadata.asJava)
        removedMetadata.foreach(b.removeTableMetadata)
        existing
      case Operation.Restore(target) =>
        val m = target.manifest
        b.clearFields().addAllFields(m.getFieldsList).clearSchemaMetadata().putAllSchemaMetadata(m.getSchemaMetadataMap)
          .clearConfig().putAllConfig(m.getConfigMap).setDataFormat(m.getDataFormat)
        target.fragments
      case Operation.Evolving(change, pending) =>
        b.clearFields().addAllFields(pending.schema.toProto.asJava)
        val known = existing.map(_.getId).toSet
        // New fragments were written under the new schema; the others gain the staged column
        // files, and Lance stamps every row of a fragment that got new column data.
        after(change).map { f =>
          val g = if (known(f.getId)) pending.withColumnFiles(f) else f
          if (stable && g.getFilesList != f.getFilesList) RowLineage.touched(g, prev.getVersion + 1) else g
        }.map(withFilesOf(pending.schema, _))
    }
    val fragments = after(op)
    appTxn.foreach { m =>
      val (key, value) = m.watermark(prev.getVersion + 1, Instant.now().toEpochMilli)
      b.putTableMetadata(key, value)
    }
    claim.foreach(c => b.putAllTableMetadata(c.updated.asJava))
    b.clearFragments().addAllFragments(fragments.asJava)
    if (nextId > 0 && (!prev.hasMaxFragmentId || nextId - 1 > Integer.toUnsignedLong(prev.getMaxFragmentId)))
      b.setMaxFragmentId((nextId - 1).toInt)
    if (!b.hasDataFormat) b.setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance").setVersion(dataFormat(prev)))
    val deletions = if (fragments.exists(_.hasDeletionFile)) FeatureFlags.DeletionFiles else 0L
    val config = if (b.getConfigCount > 0) FeatureFlags.TableConfig else 0L
    if (stable) b.setNextRowId(nextRowId)
    // Lance sets the base paths flag whenever the manifest lists a base (a clone or branch keeps its source's).
    val bases = if (b.getBasePathsCount > 0) FeatureFlags.BasePaths else 0L
    val flags = (if (stable) FeatureFlags.StableRowIds else 0L) | deletions | config | bases |
      mixedVersions(prev, b.getDataFormat.getVersion, fragments)
    b.setReaderFeatureFlags(flags).setWriterFeatureFlags(flags).build()
  }

  /**
   * Flag 256 as pylance 14 keeps it: once set it stays on every later commit (even after no file of
   * another version is left, and across restores), until an overwrite changes the table's version.
   * It is also set where files of other versions than the table's are present.
   */
  private def mixedVersions(prev: Manifest, tableVersion: String, fragments: Seq[DataFragment]): Long = {
    val kept = (prev.getReaderFeatureFlags & FeatureFlags.MixedFileVersions) != 0 && dataFormat(prev) == tableVersion
    val mixed = kept || fragments.exists(_.getFilesList.asScala.exists(f =>
      !StorageVersion.sameFileVersion(tableVersion, f.getFileMajorVersion, f.getFileMinorVersion)))
    if (mixed) FeatureFlags.MixedFileVersions else 0L
  }

  private def dataFormat(prev: Manifest): String = StorageVersion.ofManifest(prev)

  private def replace(existing: Seq[DataFragment], updated: Seq[DataFragment], removed: Seq[Long]): Seq[DataFragment] = {
    val byId = updated.map(f => f.getId -> f).toMap
    val unknown = (byId.keySet ++ removed) -- existing.map(_.getId)
    if (unknown.nonEmpty)
      throw new LanceException(s"Commit names fragments ${unknown.toSeq.sorted.mkString(", ")} that ${dataset.path} does not have")
    existing.filterNot(f => removed.contains(f.getId)).map(f => byId.getOrElse(f.getId, f))
  }

  /**
   * The index section of the next version: an Overwrite drops it, a Rewrite moves or trims the
   * coverage of the indices it may touch (see [[RewriteIndexRules]]), anything else carries it.
   */
  private def indexSectionAfter(base: Option[Snapshot], op: Operation): Option[Array[Byte]] = op match {
    case _: Operation.Overwrite => None
    case Operation.Restore(target) => target.file.indexSection
    case Operation.CreateIndex(added, removed) =>
      val gone = removed.map(Indices.directory).toSet
      val kept = base.toSeq.flatMap(b => Indices.parse(b.file.indexSection, s"${b.tablePath} version ${b.version}"))
        .filterNot(i => gone(Indices.directory(i)))
      Some(Indices.encode(kept ++ added))
    // An index on a column the new schema no longer has (dropped, or superseded by a type change) goes.
    case Operation.Merge(_, schema, _) => base.flatMap(b => withoutDroppedFields(b, schema))
    case Operation.Project(schema, _) => base.flatMap(b => withoutDroppedFields(b, schema))
    case Operation.Evolving(_, pending) => base.flatMap(b => withoutDroppedFields(b, pending.schema))
    // Lance: an index on a rewritten column no longer covers the fragments rewritten, which its
    // stored bitmap may name only through a fragment reuse index: Lance's view is trimmed.
    case Operation.Update(_, _, _, _, Some(inPlace)) => base.flatMap(b => b.file.indexSection.map { bytes =>
      val indices = Indices.parse(Some(bytes), dataset.path)
      lazy val reuse = FragmentReuse.of(dataset.storage, b.files, indices)
      Indices.encode(indices.map { i =>
        if (!i.getFieldsList.asScala.exists(f => inPlace.fields.contains(f.intValue))) i
        else Indices.coverage(i).fold(i)(c => Indices.withCoverage(i, reuse.without(c, inPlace.fragmentIds.toSeq)))
      })
    })
    case Operation.Rewrite(groups) => base.flatMap(b => b.file.indexSection.map { bytes =>
      val indices = Indices.parse(Some(bytes), s"${b.tablePath} version ${b.version}")
      Indices.encode(RewriteIndexRules.afterRewrite(indices,
        groups.map(g => g.oldFragments.map(_.getId) -> g.newFragments.map(_.getId)), b.stableRowIds))
    })
    case _ => base.flatMap(_.file.indexSection)
  }

  /** The fragment without the data files that hold no field of `schema`; it must keep one. */
  private def withFilesOf(schema: LanceSchema, f: DataFragment): DataFragment = {
    val kept = schema.filesOf(f)
    if (kept.isEmpty) throw new LanceException(s"The new schema of ${dataset.path} leaves fragment ${f.getId} without " +
      "any data file (all its columns would be dropped); a fragment needs one, so keep a column it holds")
    if (kept.size == f.getFilesCount) f else f.toBuilder.clearFiles().addAllFiles(kept.asJava).build()
  }

  private def withoutDroppedFields(base: Snapshot, schema: LanceSchema): Option[Array[Byte]] =
    base.file.indexSection.map { bytes =>
      val ids = schema.allFields.map(_.id).toSet
      val indices = Indices.parse(Some(bytes), s"${base.tablePath} version ${base.version}")
      Indices.encode(indices.filter(_.getFieldsList.asScala.forall(id => ids(id.intValue))))
    }

  /**
   * Replaces each group's old fragments by its new ones. pylance 14 leaves the new fragments at
   * the end, in id order (observed; older Lance sources splice groups in place). Every old
   * fragment must still be as the compaction read it, and new ids must be unused.
   */
  private def splice(existing: Seq[DataFragment], groups: Seq[Operation.RewriteGroup], stable: Boolean): Seq[DataFragment] = {
    val byId = existing.map(f => f.getId -> f).toMap
    groups.foreach { g =>
      g.oldFragments.foreach { old =>
        if (!byId.get(old.getId).exists(f => f.getFilesList == old.getFilesList && f.getDeletionFile == old.getDeletionFile))
          throw new LanceException(s"Compaction of ${dataset.path} rewrote fragment ${old.getId}, which changed or vanished since")
      }
      g.newFragments.map(_.getId).find(byId.contains).foreach(id =>
        throw new LanceException(s"Compaction of ${dataset.path} names new fragment $id, an id already in use"))
    }
    val removed = groups.flatMap(_.oldFragments.map(_.getId)).toSet
    val created = groups.flatMap(_.newFragments).sortBy(_.getId)
    existing.filterNot(f => removed(f.getId)) ++ (if (stable) created else created.map(RowLineage.strip))
  }

  private def now(): Timestamp = {
    val t = Instant.now()
    Timestamp.newBuilder().setSeconds(t.getEpochSecond).setNanos(t.getNano).build()
  }
}

object Committer {
  /** Manifest puts that failed with a store error (and did not land) before a commit gives up. */
  val StoreAttempts = 3

  /** The fragments an operation adds, in the order the commit assigns their ids. */
  private def newFragments(op: Operation): Seq[DataFragment] = op match {
    case Operation.Append(fs) => fs
    case o: Operation.Overwrite => o.fragments
    case u: Operation.Update => u.newFragments
    case Operation.Rewrite(groups) => groups.flatMap(_.newFragments)
    case _ => Nil
  }

  /** The write an operation carries: itself, or the write a schema change lands with. */
  private[commit] def changeOf(op: Operation): Operation = op match {
    case e: Operation.Evolving => e.change
    case other => other
  }

  /**
   * Columns the new fragments of `op` hold under field ids that `latest` gives to another field
   * of the same name (a type change rewrote them): written against `read`, they would be lost.
   */
  private def superseded(op: Operation, read: LanceSchema, latest: LanceSchema): Seq[String] = {
    val fresh = op match {
      case Operation.Append(fs) => fs
      case u: Operation.Update => u.newFragments
      case _ => Nil
    }
    if (fresh.isEmpty || read.allFields.map(_.id) == latest.allFields.map(_.id)) Nil
    else {
      val latestIds = latest.fields.map(f => f.name -> f.id).toMap
      val written = fresh.flatMap(_.getFilesList.asScala.flatMap(_.getFieldsList.asScala.map(_.intValue))).toSet
      read.fields.filter(f => written(f.id) && latestIds.get(f.name).exists(_ != f.id)).map(_.name)
    }
  }

  /** A committed compaction of fragments our Delete or Update changes (see [[RewriteTranslation]]). */
  private final case class CompactedUnder(version: Long, txn: Transaction, snapshot: Snapshot)

  /** Table config key that records the data file version chosen at creation. */
  val StorageVersionKey = "sparklance.data_storage_version"
  /** Table config key for the rows-per-file limit of new data files. */
  val MaxRowsPerFileKey = "sparklance.max_rows_per_file"
}
