package sparklance.format.commit

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TransactionProtos.Transaction

/**
 * What a commit records about the statement that made it, in the Lance transaction's
 * `transaction_properties` (a string map every Lance reader keeps as it is: pylance shows it as
 * `ds.read_transaction(v).transaction_properties`). Keys are namespaced `sparklance.` so they
 * never meet Lance's own (`__lance_commit_message`) or a user's.
 */
final case class CommitRecord(statement: Statement, rows: Option[RowCounts] = None) {
  def properties: Map[String, String] = Map(CommitRecord.StatementKey -> statement.text) ++ rows.toSeq.flatMap { r =>
    Seq(CommitRecord.InsertedKey -> r.inserted.toString, CommitRecord.UpdatedKey -> r.updated.toString,
      CommitRecord.DeletedKey -> r.deleted.toString)
  }
}

object CommitRecord {
  val StatementKey = "sparklance.statement"
  val InsertedKey = "sparklance.rows_inserted"
  val UpdatedKey = "sparklance.rows_updated"
  val DeletedKey = "sparklance.rows_deleted"

  /**
   * The statement a transaction names, as stored (a newer sparklance may name a kind this one
   * does not know); None for another writer's commit.
   */
  def statementText(txn: Transaction): Option[String] = Option(txn.getTransactionPropertiesMap.get(StatementKey))

  /** The rows the statement counted, when the transaction records all three counts. */
  def rows(txn: Transaction): Option[RowCounts] = {
    val props = txn.getTransactionPropertiesMap.asScala
    for {
      i <- props.get(InsertedKey).flatMap(_.toLongOption)
      u <- props.get(UpdatedKey).flatMap(_.toLongOption)
      d <- props.get(DeletedKey).flatMap(_.toLongOption)
    } yield RowCounts(i, u, d)
  }
}
