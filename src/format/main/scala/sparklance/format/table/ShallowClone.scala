package sparklance.format.table

import java.util.UUID
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{BasePath, DataFragment}
import sparklance.format.proto.TransactionProtos.Transaction

/**
 * A shallow clone, as Lance's Clone operation writes it: a new table whose first version is
 * `source` (same number, schema, fragments, indices) with every file it names left where it is.
 * The source becomes one more base path (a dataset root, named after the source's branch), and
 * each file without a base id gets that one; files of the source's own bases keep theirs.
 */
object ShallowClone {
  /**
   * Writes the clone's transaction file and first manifest at `target` (whose `branch` the
   * manifest records, None for a clone that is a table of its own): the paths written, manifest
   * last, so that a caller whose next step fails can take them back. None (and nothing left
   * behind) if `target` has that version already.
   */
  def create(storage: Storage, source: Snapshot, sourceBranch: Option[String], target: Dataset,
      branch: Option[String]): Option[Seq[String]] = {
    val m = source.manifest
    val baseId = if (m.getBasePathsCount == 0) 0 else m.getBasePathsList.asScala.map(_.getId).max + 1
    val base = BasePath.newBuilder().setId(baseId).setIsDatasetRoot(true).setPath(source.tablePath)
    sourceBranch.foreach(base.setName)
    def rebased(f: DataFragment): DataFragment = {
      val b = f.toBuilder
      (0 until b.getFilesCount).filterNot(b.getFiles(_).hasBaseId).foreach(i => b.setFiles(i, b.getFiles(i).toBuilder.setBaseId(baseId)))
      if (b.hasDeletionFile && !b.getDeletionFile.hasBaseId) b.setDeletionFile(b.getDeletionFile.toBuilder.setBaseId(baseId))
      b.build()
    }
    val uuid = UUID.randomUUID().toString
    val txnName = s"${source.version}-$uuid.txn"
    val clone = Transaction.Clone.newBuilder().setIsShallow(true).setRefVersion(source.version).setRefPath(source.tablePath)
    sourceBranch.foreach(clone.setRefName)
    branch.foreach(clone.setBranchName)
    val txn = Transaction.newBuilder().setReadVersion(source.version).setUuid(uuid).setClone(clone).build()
    val flags = FeatureFlags.BasePaths
    val b = m.toBuilder.clearTag().setTransactionFile(txnName)
      .clearFragments().addAllFragments(source.fragments.map(rebased).asJava)
      .addBasePaths(base)
      .setReaderFeatureFlags(m.getReaderFeatureFlags | flags).setWriterFeatureFlags(m.getWriterFeatureFlags | flags)
    branch.fold(b.clearBranch())(b.setBranch)
    val index = source.file.indexSection.map { bytes =>
      Indices.encode(Indices.parse(Some(bytes), s"${source.tablePath} version ${source.version}")
        .map(i => if (i.hasBaseId) i else i.toBuilder.setBaseId(baseId).build()))
    }
    val txnPath = Storage.join(target.path, s"_transactions/$txnName")
    val manifestPath = Storage.join(target.path, s"_versions/${source.naming.fileName(source.version)}")
    Using.resource(storage.create(txnPath))(_.write(txn.toByteArray))
    if (storage.putIfAbsent(manifestPath, ManifestFile.encode(b.build(), index, Some(txn)))) Some(Seq(txnPath, manifestPath))
    else { storage.delete(txnPath); None }
  }
}
