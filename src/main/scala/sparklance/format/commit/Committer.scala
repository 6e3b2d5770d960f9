package sparklance.format.commit

import com.google.protobuf.Timestamp
import java.time.Instant
import java.util.UUID
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.{BuildInfo, CommitConflictException, LanceException}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table._

/**
 * Turns an operation into the next version: writes the transaction file, builds the manifest
 * from the version it read, and publishes it with put-if-absent. Losing the race to a
 * compatible concurrent commit (an Append against anything but Overwrite/Restore) rebases and
 * retries; anything else fails with CommitConflictException and leaves the table untouched.
 */
final class Committer(dataset: Dataset, maxRetries: Int = 20) {
  private val storage = dataset.storage

  /** `read` is the snapshot the operation was planned against; None when creating the table. */
  def commit(read: Option[Snapshot], op: Operation, properties: Map[String, String] = Map.empty): CommitResult = {
    read.foreach(s => FeatureFlags.check(s.tablePath, s.version, s.manifest.getReaderFeatureFlags,
      s.manifest.getWriterFeatureFlags, forWrite = true))
    val readVersion = read.map(_.version).getOrElse(0L)
    val txn = Transactions.build(readVersion, UUID.randomUUID().toString, op, properties)
    val txnName = s"$readVersion-${txn.getUuid}.txn"
    Using.resource(storage.create(Storage.join(dataset.path, s"_transactions/$txnName")))(_.write(txn.toByteArray))

    var base = read
    var attempt = 0
    while (true) {
      val naming = base.map(_.naming).getOrElse(VersionNaming.V2)
      val manifest = nextManifest(base, op, txnName)
      val index = if (op.isInstanceOf[Operation.Overwrite]) None else base.flatMap(_.file.indexSection)
      val bytes = ManifestFile.encode(manifest, index, Some(txn))
      val target = Storage.join(dataset.path, s"_versions/${naming.fileName(manifest.getVersion)}")
      if (storage.putIfAbsent(target, bytes)) {
        storage.overwrite(Storage.join(dataset.path, "_versions/latest_version_hint.json"),
          s"""{"version":${manifest.getVersion}}""".getBytes("UTF-8"))
        return CommitResult(Snapshot(dataset.path, naming, ManifestFile(manifest, index)))
      }
      val committed = manifest.getVersion
      val latest = dataset.snapshot(forWrite = true)
      val blockers = (committed to latest.version).map(v => v -> Transactions.committedOperation(dataset, v))
        .filterNot { case (_, other) => Transactions.compatible(op, other) }
      if (blockers.nonEmpty || attempt >= maxRetries) {
        val (v, other) = blockers.headOption.getOrElse(committed -> "unknown")
        throw new CommitConflictException(dataset.path, v,
          s"our ${op.name} (read version $readVersion) conflicts with the $other committed as version $v; " +
            "the table is unchanged, re-run the statement")
      }
      base = Some(latest)
      attempt += 1
    }
    throw new IllegalStateException("unreachable")
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
    def assign(fs: Seq[DataFragment]): Seq[DataFragment] = fs.map { f =>
      val withId = f.toBuilder.setId(nextId).build(); nextId += 1; withId
    }
    val existing = prev.getFragmentsList.asScala.toSeq
    val fragments = op match {
      case Operation.Append(fs) => existing ++ assign(fs)
      case Operation.Overwrite(fs, schema, config) =>
        b.clearFields().addAllFields(schema.toProto.asJava)
          .clearSchemaMetadata().putAllSchemaMetadata(schema.metadataProto)
          .putAllConfig(config.asJava)
          .setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance")
            .setVersion(config.getOrElse(Committer.StorageVersionKey, dataFormat(prev))))
        assign(fs)
      case Operation.Delete(updated, deletedIds, _) => replace(existing, updated, deletedIds)
      case Operation.Update(removedIds, updated, newFragments) => replace(existing, updated, removedIds) ++ assign(newFragments)
    }
    b.clearFragments().addAllFragments(fragments.asJava)
    if (nextId > 0 && (!prev.hasMaxFragmentId || nextId - 1 > Integer.toUnsignedLong(prev.getMaxFragmentId)))
      b.setMaxFragmentId((nextId - 1).toInt)
    if (!b.hasDataFormat) b.setDataFormat(Manifest.DataStorageFormat.newBuilder().setFileFormat("lance").setVersion("2.0"))
    val deletions = if (fragments.exists(_.hasDeletionFile)) FeatureFlags.DeletionFiles else 0L
    val config = if (b.getConfigCount > 0) FeatureFlags.TableConfig else 0L
    val kept = prev.getReaderFeatureFlags & FeatureFlags.StableRowIds
    val flags = kept | deletions | config
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
