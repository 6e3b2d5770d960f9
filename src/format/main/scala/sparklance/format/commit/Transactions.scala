package sparklance.format.commit

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.io.Storage
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.table.{Dataset, ManifestFile, Snapshot, VersionNaming}

/** Transaction messages: building ours, and reading what other writers committed. */
object Transactions {
  def build(readVersion: Long, uuid: String, op: Operation, properties: Map[String, String]): Transaction = {
    val b = Transaction.newBuilder().setReadVersion(readVersion).setUuid(uuid).putAllTransactionProperties(properties.asJava)
    op match {
      case Operation.Append(fs) => b.setAppend(Transaction.Append.newBuilder().addAllFragments(fs.asJava))
      case Operation.Overwrite(fs, schema, config, _, _) =>
        b.setOverwrite(Transaction.Overwrite.newBuilder().addAllFragments(fs.asJava).addAllSchema(schema.toProto.asJava)
          .putAllSchemaMetadata(schema.metadataProto).putAllConfigUpsertValues(config.asJava))
      case Operation.Delete(updated, deletedIds, predicate, _) =>
        b.setDelete(Transaction.Delete.newBuilder().addAllUpdatedFragments(updated.asJava)
          .addAllDeletedFragmentIds(deletedIds.map(Long.box).asJava).setPredicate(predicate))
      case Operation.Update(removed, updated, created, _, inPlace) =>
        val u = Transaction.Update.newBuilder().addAllRemovedFragmentIds(removed.map(Long.box).asJava)
          .addAllUpdatedFragments(updated.asJava).addAllNewFragments(created.asJava)
        inPlace match {
          case None => u.setUpdateMode(Transaction.UpdateMode.REWRITE_ROWS)
          case Some(p) =>
            // The offsets tell Lance which rows of the rewritten fragments changed, to stamp them.
            val offsets = p.rows.map { case (id, rows) =>
              Long.box(id) -> com.google.protobuf.ByteString.copyFrom(sparklance.format.deletion.PortableBitmaps.toBytes(rows))
            }
            u.addAllFieldsModified(p.fields.map(Int.box).asJava).setUpdateMode(Transaction.UpdateMode.REWRITE_COLUMNS)
              .putAllUpdatedFragmentOffsetBitmaps(offsets.asJava)
        }
        b.setUpdate(u)
      case Operation.Restore(target) => b.setRestore(Transaction.Restore.newBuilder().setVersion(target.version))
      case Operation.ReserveFragments(n) => b.setReserveFragments(Transaction.ReserveFragments.newBuilder().setNumFragments(n))
      case Operation.CreateIndex(added, removed) =>
        b.setCreateIndex(Transaction.CreateIndex.newBuilder().addAllNewIndices(added.asJava).addAllRemovedIndices(removed.asJava))
      case Operation.Merge(fs, schema, pn) =>
        // pylance leaves schema_metadata (field 3) out: the manifest keeps the table's.
        b.setMerge(Transaction.Merge.newBuilder().addAllFragments(fs.asJava).addAllSchema(schema.toProto.asJava)
          .setPreservesNullability(pn))
      case Operation.Project(schema, pn) =>
        b.setProject(Transaction.Project.newBuilder().addAllSchema(schema.toProto.asJava).setPreservesNullability(pn))
      case Operation.UpdateConfig(config, removedConfig, metadata, removedMetadata) =>
        def updates(set: Map[String, String], removed: Set[String]) = Transaction.UpdateMap.newBuilder()
          .addAllUpdateEntries((set.toSeq.sortBy(_._1).map { case (k, v) => Transaction.UpdateMapEntry.newBuilder().setKey(k).setValue(v).build() } ++
            removed.toSeq.sorted.map(k => Transaction.UpdateMapEntry.newBuilder().setKey(k).build())).asJava)
        val u = Transaction.UpdateConfig.newBuilder()
        if (config.nonEmpty || removedConfig.nonEmpty) u.setConfigUpdates(updates(config, removedConfig))
        if (metadata.nonEmpty || removedMetadata.nonEmpty) u.setTableMetadataUpdates(updates(metadata, removedMetadata))
        b.setUpdateConfig(u)
      case _: Operation.Evolving =>
        throw new IllegalArgumentException("a write with a schema change is recorded as a Merge of the fragments its manifest lists")
      case Operation.Rewrite(groups) =>
        // Only the groups: Lance no longer writes the deprecated flat old/new fragment lists.
        b.setRewrite(Transaction.Rewrite.newBuilder().addAllGroups(groups.map(g => Transaction.Rewrite.RewriteGroup.newBuilder()
          .addAllOldFragments(g.oldFragments.asJava).addAllNewFragments(g.newFragments.asJava).build()).asJava))
    }
    b.build()
  }

  /**
   * Reads `version` back: Absent when its manifest does not exist, Unreadable when the store
   * fails or the manifest cannot be decoded, else the snapshot and its transaction.
   */
  def lookup(dataset: Dataset, version: Long, naming: VersionNaming): VersionLookup = lookup(dataset, version, naming, None)

  /** [[lookup]] of a version a listing showed, with its manifest's size: read without asking the store whether it exists. */
  def lookup(dataset: Dataset, version: Long, listing: Dataset#Listing): VersionLookup =
    lookup(dataset, version, listing.naming, listing.manifestSize(version))

  private def lookup(dataset: Dataset, version: Long, naming: VersionNaming, size: Option[Long]): VersionLookup = {
    val path = Storage.join(dataset.path, s"_versions/${naming.fileName(version)}")
    try {
      if (size.isEmpty && !dataset.storage.exists(path)) VersionLookup.Absent
      else {
        val bytes = size.fold(dataset.storage.readAll(path))(dataset.storage.readAll(path, _))
        val file = ManifestFile.decode(path, bytes)
        if (file.manifest.getVersion != version)
          VersionLookup.Unreadable(new IllegalStateException(s"$path holds version ${file.manifest.getVersion}"))
        else VersionLookup.Committed(Snapshot(dataset.path, naming, file), transactionOf(dataset, path, bytes, file))
      }
    } catch { case NonFatal(e) => VersionLookup.Unreadable(e) }
  }

  /** The `_transactions` file the manifest names, else the manifest's inline copy (pylance writes both, byte-identical). */
  private def transactionOf(dataset: Dataset, path: String, bytes: Array[Byte], file: ManifestFile): Option[Transaction] =
    transactionFile(dataset, file.manifest.getTransactionFile)
      .orElse(try ManifestFile.inlineTransaction(path, bytes) catch { case NonFatal(_) => None })

  /** The `_transactions` file `name` (empty: none), if it can be read. */
  private def transactionFile(dataset: Dataset, name: String): Option[Transaction] =
    if (name.isEmpty) None
    else try Some(Transaction.parseFrom(dataset.storage.readAll(Storage.join(dataset.path, s"_transactions/$name"))))
    catch { case NonFatal(_) => None }

  /** The transaction that created `snapshot`, if it can be read: its `_transactions` file, else the manifest's inline copy. */
  def of(dataset: Dataset, snapshot: Snapshot): Option[Transaction] =
    // The inline copy needs the manifest's bytes again: only when there is no file to read.
    transactionFile(dataset, snapshot.manifest.getTransactionFile)
      .orElse(committed(dataset, snapshot.version, Some(snapshot.naming)))

  /** The transaction that created `version`, if it can be read. */
  def committed(dataset: Dataset, version: Long, naming: Option[VersionNaming] = None): Option[Transaction] =
    lookup(dataset, version, naming.getOrElse(dataset.naming)) match {
      case VersionLookup.Committed(_, txn) => txn
      case _ => None
    }

  /**
   * The operation's name as Lance spells it (Append, CreateIndex, ...). An operation newer than
   * our protos is kept by protobuf as an unknown field of the `operation` oneof (numbers 100 on).
   */
  def operationName(txn: Transaction): String = txn.getOperationCase match {
    case OperationCase.OPERATION_NOT_SET =>
      txn.getUnknownFields.asMap().keySet().asScala.map(_.toInt).filter(_ >= 100).minOption
        .fold("transaction without an operation")(field => s"unknown operation (transaction field $field)")
    case c => c.name().toLowerCase.split('_').map(_.capitalize).mkString
  }
}
