package sparklance.format.commit

import com.google.protobuf.Timestamp
import java.time.Instant
import java.util.UUID
import java.util.concurrent.ThreadLocalRandom
import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.util.control.NonFatal
import sparklance.format.{BuildInfo, CommitConflictException, LanceException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.rowids.RowLineage
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table._

/**
 * Turns an operation into the next version: writes the transaction file, builds the manifest
 * from the version it read, and publishes it with put-if-absent. Losing the race makes it read
 * the transactions committed since and either rebase onto the latest version and retry (an
 * Append against anything but Overwrite/Restore; a Delete/Update against commits that leave the
 * rows and fragments it changed alone, see [[RowLevelRebase]]) or fail with
 * CommitConflictException, leaving the table untouched. A retry first checks whether an earlier
 * attempt of ours landed after all (same transaction uuid) and then returns that version.
 */
final class Committer(dataset: Dataset, maxRetries: Int = 20, isolation: Isolation = Isolation.Serializable) {
  private val storage = dataset.storage

  /** `read` is the snapshot the operation was planned against; None when creating the table. */
  def commit(read: Option[Snapshot], op: Operation, properties: Map[String, String] = Map.empty): CommitResult = {
    read.foreach(s => FeatureFlags.check(s.tablePath, s.version, s.manifest.getReaderFeatureFlags,
      s.manifest.getWriterFeatureFlags, forWrite = true))
    val readVersion = read.map(_.version).getOrElse(0L)
    val uuid = UUID.randomUUID().toString
    var (txn, txnName) = writeTransaction(readVersion, uuid, op, properties)

    var current = op
    var base = read
    var attempt = 0
    var uncertain = false // a put-if-absent failed without saying whether it wrote
    val ownFiles = scala.collection.mutable.ArrayBuffer.empty[(Long, DeletionFile)] // deletion files written by rebases
    def conflict(version: Long, other: String, detail: String): Nothing = {
      if (!uncertain) dropDeletionFiles(ownFiles.toSeq)
      throw new CommitConflictException(dataset.path, version,
        s"our ${op.name} (read version $readVersion) conflicts with the $other committed as version $version: " +
          s"$detail; the table is unchanged, re-run the statement")
    }
    while (true) {
      val naming = base.map(_.naming).getOrElse(VersionNaming.V2)
      val manifest = nextManifest(base, current, txnName)
      val index = if (current.isInstanceOf[Operation.Overwrite]) None else base.flatMap(_.file.indexSection)
      val bytes = ManifestFile.encode(manifest, index, Some(txn))
      val target = Storage.join(dataset.path, s"_versions/${naming.fileName(manifest.getVersion)}")
      val put = try Right(storage.putIfAbsent(target, bytes)) catch { case NonFatal(e) => Left(e) }
      if (put == Right(true)) {
        writeHint(manifest.getVersion)
        return CommitResult(Snapshot(dataset.path, naming, ManifestFile(manifest, index)))
      }
      if (put.isLeft) uncertain = true
      if (base.isEmpty && !dataset.exists) {
        // Creating the table and the store failed before anything landed: try the same put again.
        if (attempt >= maxRetries) throw put.left.toOption.getOrElse(new IllegalStateException(s"cannot create $target"))
        attempt += 1
        backoff(attempt)
      } else {
        val latest = dataset.snapshot(forWrite = true)
        val newer = (manifest.getVersion to latest.version).map(v => v -> Transactions.committed(dataset, v, Some(latest.naming)))
        val landed = newer.collectFirst { case (v, Some(t)) if t.getUuid == uuid => v }
        if (landed.isDefined) {
          writeHint(latest.version)
          return CommitResult(dataset.snapshot(landed))
        }
        put match {
          case Left(e) if newer.isEmpty && attempt >= maxRetries => throw e
          case _ if attempt >= maxRetries =>
            conflict(latest.version, newer.lastOption.map(_._2.fold("unknown transaction")(Transactions.operationName))
              .getOrElse("commit"), s"gave up after $maxRetries retries against concurrent commits")
          case _ =>
        }
        current match {
          case _: Operation.Delete | _: Operation.Update if base.isDefined =>
            val rebased = RowLevelRebase.rebase(dataset, current, base.get, latest, newer, conflict, isolation)
            if (rebased.op ne current) {
              val stillLive = live(rebased.op).toSet
              val superseded = ownFiles.filterNot(stillLive)
              if (!uncertain) { dropDeletionFiles(superseded.toSeq); ownFiles --= superseded }
              ownFiles ++= rebased.written
              current = rebased.op
              val (t, n) = writeTransaction(latest.version, uuid, current, properties)
              txn = t; txnName = n
            }
          case _ =>
            newer.foreach { case (v, t) =>
              val other = t.map(Transactions.operationName).getOrElse("unknown transaction")
              if (!Transactions.compatible(current, other))
                conflict(v, other, "the two cannot be reconciled")
            }
        }
        base = Some(latest)
        attempt += 1
        backoff(attempt)
      }
    }
    throw new IllegalStateException("unreachable")
  }

  private def writeTransaction(readVersion: Long, uuid: String, op: Operation,
      properties: Map[String, String]): (Transaction, String) = {
    val txn = Transactions.build(readVersion, uuid, op, properties)
    val name = s"$readVersion-$uuid.txn"
    Using.resource(storage.create(Storage.join(dataset.path, s"_transactions/$name")))(_.write(txn.toByteArray))
    (txn, name)
  }

  /** The hint is only a hint: failing to write it must not turn a landed commit into an error. */
  private def writeHint(version: Long): Unit =
    try storage.overwrite(Storage.join(dataset.path, "_versions/latest_version_hint.json"), s"""{"version":$version}""".getBytes("UTF-8"))
    catch { case NonFatal(_) => }

  /** The deletion files an operation's updated fragments reference. */
  private def live(op: Operation): Seq[(Long, DeletionFile)] = (op match {
    case d: Operation.Delete => d.updated
    case u: Operation.Update => u.updated
    case _ => Nil
  }).filter(_.hasDeletionFile).map(f => f.getId -> f.getDeletionFile)

  /** Best effort: files only we ever referenced, in manifests that never landed. */
  private def dropDeletionFiles(files: Seq[(Long, DeletionFile)]): Unit = files.foreach { case (id, f) =>
    try storage.delete(Storage.join(dataset.path, DeletionFiles.relativePath(id, f))) catch { case NonFatal(_) => }
  }

  /** A short randomized pause, growing with the attempt, so racing writers spread out. */
  private def backoff(attempt: Int): Unit = {
    val ceiling = math.min(5L << math.min(attempt, 5), 150L)
    Thread.sleep(ThreadLocalRandom.current().nextLong(1L, ceiling + 1))
  }

  private def nextManifest(base: Option[Snapshot], op: Operation, txnName: String): Manifest = {
    val prev = base.map(_.manifest).getOrElse(Manifest.getDefaultInstance)
    val b = prev.toBuilder
      .setVersion(prev.getVersion + 1)
      .clearTag().clearVersionAuxData()
      .setTimestamp(now())
      .setTransactionFile(txnName)
      .setWriterVersion(Manifest.WriterVersion.newBuilder().setLibrary("sparklance").setVersion(BuildInfo.version))
    var nextId = if (prev.hasMaxFragmentId) Integer.toUnsignedLong(prev.getMaxFragmentId) + 1 else 0L
    val stable = op match {
      case Operation.Overwrite(_, _, _, Some(choice)) => choice
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
    val fragments = op match {
      case Operation.Append(fs) => existing ++ assign(fs)
      case Operation.Overwrite(fs, schema, config, _) =>
        b.clearFields().addAllFields(schema.toProto.asJava)
          .clearSchemaMetadata().putAllSchemaMetadata(schema.metadataProto)
          .putAllConfig(config.asJava)
          .setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance")
            .setVersion(config.getOrElse(Committer.StorageVersionKey, dataFormat(prev))))
        assign(fs)
      case Operation.Delete(updated, deletedIds, _, _) => replace(existing, updated, deletedIds)
      case Operation.Update(removedIds, updated, newFragments, _) => replace(existing, updated, removedIds) ++ assign(newFragments)
    }
    b.clearFragments().addAllFragments(fragments.asJava)
    if (nextId > 0 && (!prev.hasMaxFragmentId || nextId - 1 > Integer.toUnsignedLong(prev.getMaxFragmentId)))
      b.setMaxFragmentId((nextId - 1).toInt)
    if (!b.hasDataFormat) b.setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance").setVersion("2.0"))
    val deletions = if (fragments.exists(_.hasDeletionFile)) FeatureFlags.DeletionFiles else 0L
    val config = if (b.getConfigCount > 0) FeatureFlags.TableConfig else 0L
    if (stable) b.setNextRowId(nextRowId)
    val flags = (if (stable) FeatureFlags.StableRowIds else 0L) | deletions | config
    b.setReaderFeatureFlags(flags).setWriterFeatureFlags(flags).build()
  }

  private def dataFormat(prev: Manifest): String =
    if (prev.hasDataFormat && prev.getDataFormat.getVersion.nonEmpty) prev.getDataFormat.getVersion else "2.0"

  private def replace(existing: Seq[DataFragment], updated: Seq[DataFragment], removed: Seq[Long]): Seq[DataFragment] = {
    val byId = updated.map(f => f.getId -> f).toMap
    val unknown = (byId.keySet ++ removed) -- existing.map(_.getId)
    if (unknown.nonEmpty)
      throw new LanceException(s"Commit names fragments ${unknown.toSeq.sorted.mkString(", ")} that ${dataset.path} does not have")
    existing.filterNot(f => removed.contains(f.getId)).map(f => byId.getOrElse(f.getId, f))
  }

  private def now(): Timestamp = {
    val t = Instant.now()
    Timestamp.newBuilder().setSeconds(t.getEpochSecond).setNanos(t.getNano).build()
  }
}

object Committer {
  /** Table config key that records the data file version chosen at creation. */
  val StorageVersionKey = "sparklance.data_storage_version"
  /** Table config key for the rows-per-file limit of new data files. */
  val MaxRowsPerFileKey = "sparklance.max_rows_per_file"
}
