package sparklance.spark.scan

import org.apache.spark.sql.connector.expressions.filter.Predicate
import sparklance.spark.LanceTable

/**
 * One scan of a Lance table: the table as the scan loaded it (its path and version) and the
 * predicates Spark pushed into it, whose conjunction bounds the rows it could have returned.
 * Runtime filters are not part of it: they only say which old fragments matched, nothing of rows
 * that arrived later.
 */
final case class TableRead(table: LanceTable, pushed: Seq[Predicate])

/** A scan that tells what it read, for the commit of the statement it belongs to (see [[StatementReads]]). */
trait ReadsTable {
  def read: TableRead
}
