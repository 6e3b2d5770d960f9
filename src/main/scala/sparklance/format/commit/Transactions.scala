package sparklance.format.commit

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.io.Storage
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.table.{Dataset, ManifestFile, VersionNaming}

/** Transaction messages: building ours, and reading what other writers committed. */
object Transactions {
  def build(readVersion: Long, uuid: String, op: Operation, properties: Map[String, String]): Transaction = {
    val b = Transaction.newBuilder().setReadVersion(readVersion).setUuid(uuid).putAllTransactionProperties(properties.asJava)
    op match {
      case Operation.Append(fs) => b.setAppend(Transaction.Append.newBuilder().addAllFragments(fs.asJava))
      case Operation.Overwrite(fs, schema, config, _) =>
        b.setOverwrite(Transaction.Overwrite.newBuilder().addAllFragments(fs.asJava).addAllSchema(schema.toProto.asJava)
          .putAllSchemaMetadata(schema.metadataProto).putAllConfigUpsertValues(config.asJava))
      case Operation.Delete(updated, deletedIds, predicate, _) =>
        b.setDelete(Transaction.Delete.newBuilder().addAllUpdatedFragments(updated.asJava)
          .addAllDeletedFragmentIds(deletedIds.map(Long.box).asJava).setPredicate(predicate))
      case Operation.Update(removed, updated, created, _) =>
        b.setUpdate(Transaction.Update.newBuilder().addAllRemovedFragmentIds(removed.map(Long.box).asJava)
          .addAllUpdatedFragments(updated.asJava).addAllNewFragments(created.asJava)
          .setUpdateMode(Transaction.UpdateMode.REWRITE_ROWS))
    }
    b.build()
  }

  /**
   * The transaction that created `version`: the `_transactions` file its manifest names, else the
   * manifest's inline copy (pylance writes both, byte-identical). None when neither can be read,
   * which callers treat as a conflict.
   */
  def committed(dataset: Dataset, version: Long, naming: Option[VersionNaming] = None): Option[Transaction] =
    try {
      val path = Storage.join(dataset.path, s"_versions/${naming.getOrElse(dataset.naming).fileName(version)}")
      val bytes = dataset.storage.readAll(path)
      val manifest = ManifestFile.decode(path, bytes).manifest
      if (manifest.getVersion != version) None
      else {
        val fromFile =
          if (manifest.getTransactionFile.isEmpty) None
          else try Some(Transaction.parseFrom(dataset.storage.readAll(
            Storage.join(dataset.path, s"_transactions/${manifest.getTransactionFile}"))))
          catch { case NonFatal(_) => None }
        fromFile.orElse(ManifestFile.inlineTransaction(path, bytes))
      }
    } catch { case NonFatal(_) => None }

  /**
   * The name of the operation that created `version`, from its transaction file or inline
   * section; "unknown transaction" when neither can be read (which callers treat as a conflict).
   */
  def committedOperation(dataset: Dataset, version: Long): String =
    committed(dataset, version).map(operationName).getOrElse("unknown transaction")

  /**
   * Operations our protos do not model, by their field number in Transaction's `operation` oneof;
   * protobuf-java keeps them as unknown fields, so we can still tell what they were.
   */
  private val unmodelled: Seq[(Int, String)] = Seq(103 -> "CreateIndex", 105 -> "Merge", 107 -> "ReserveFragments",
    109 -> "Project", 110 -> "UpdateConfig", 111 -> "DataReplacement", 112 -> "UpdateMemWalState", 113 -> "Clone",
    114 -> "UpdateBases", 115 -> "DataOverlay", 116 -> "AppendFragmentReuseTransitions")

  def operationName(txn: Transaction): String = txn.getOperationCase match {
    case OperationCase.OPERATION_NOT_SET =>
      unmodelled.collectFirst { case (field, name) if txn.getUnknownFields.hasField(field) => name }
        .getOrElse("unknown transaction")
    case c => c.name().toLowerCase.split('_').map(_.capitalize).mkString
  }

  /**
   * Whether `ours` may be rebased onto a version created by `other` without looking at the
   * fragments either touches. Delete and Update need the fragment-level check of
   * [[RowLevelRebase]]; this answers false for them.
   */
  def compatible(ours: Operation, other: String): Boolean = ours match {
    case _: Operation.Append => Set("Append", "Delete", "Update", "Rewrite", "CreateIndex").contains(other)
    case _ => false
  }
}
