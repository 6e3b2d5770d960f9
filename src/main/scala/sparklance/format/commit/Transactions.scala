package sparklance.format.commit

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.io.Storage
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.table.Dataset

/** Transaction messages: building ours, and reading what other writers committed. */
object Transactions {
  def build(readVersion: Long, uuid: String, op: Operation, properties: Map[String, String]): Transaction = {
    val b = Transaction.newBuilder().setReadVersion(readVersion).setUuid(uuid).putAllTransactionProperties(properties.asJava)
    op match {
      case Operation.Append(fs) => b.setAppend(Transaction.Append.newBuilder().addAllFragments(fs.asJava))
      case Operation.Overwrite(fs, schema, config) =>
        b.setOverwrite(Transaction.Overwrite.newBuilder().addAllFragments(fs.asJava).addAllSchema(schema.toProto.asJava)
          .putAllSchemaMetadata(schema.metadataProto).putAllConfigUpsertValues(config.asJava))
      case Operation.Delete(updated, deletedIds, predicate) =>
        b.setDelete(Transaction.Delete.newBuilder().addAllUpdatedFragments(updated.asJava)
          .addAllDeletedFragmentIds(deletedIds.map(Long.box).asJava).setPredicate(predicate))
      case Operation.Update(removed, updated, created) =>
        b.setUpdate(Transaction.Update.newBuilder().addAllRemovedFragmentIds(removed.map(Long.box).asJava)
          .addAllUpdatedFragments(updated.asJava).addAllNewFragments(created.asJava)
          .setUpdateMode(Transaction.UpdateMode.REWRITE_ROWS))
    }
    b.build()
  }

  /**
   * The name of the operation that created `version`, from its transaction file or inline
   * section; "unknown transaction" when neither can be read (which callers treat as a conflict).
   */
  def committedOperation(dataset: Dataset, version: Long): String =
    try {
      val snap = dataset.snapshot(Some(version))
      val txnFile = snap.manifest.getTransactionFile
      val txn =
        if (txnFile.nonEmpty) Transaction.parseFrom(dataset.storage.readAll(Storage.join(dataset.path, s"_transactions/$txnFile")))
        else null
      if (txn == null) "unknown transaction" else operationName(txn)
    } catch { case NonFatal(_) => "unknown transaction" }

  def operationName(txn: Transaction): String = txn.getOperationCase match {
    case OperationCase.OPERATION_NOT_SET => "unknown transaction"
    case c => c.name().toLowerCase.split('_').map(_.capitalize).mkString
  }

  /** Whether `ours` may be rebased onto a version created by `other` without re-planning. */
  def compatible(ours: Operation, other: String): Boolean = ours match {
    case _: Operation.Append => Set("Append", "Delete", "Update", "Rewrite", "CreateIndex").contains(other)
    case _ => false
  }
}
