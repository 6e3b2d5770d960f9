package sparklance.spark.scan

import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.sql.connector.expressions.filter.Predicate
import scala.jdk.CollectionConverters._
import sparklance.format.commit.ReadSet
import sparklance.spark.LanceTable

/**
 * The scans made of one table instance, each as the conjunction of the predicates Spark pushed
 * into it, so that a commit can tell under serializable isolation whether rows other writers
 * committed meanwhile could have been read. Within one statement Spark resolves every reference
 * to the target to the same instance (a MERGE's target and source subqueries, an insert-only
 * MERGE's anti-join, INSERT INTO t SELECT ... FROM t), so the instance is where its reads meet.
 * Runtime filters are not recorded: they only say which old fragments matched, nothing of rows
 * that arrived later. Equal scans are kept once: a DataFrame reused for many actions rescans its
 * table instance each time.
 */
final class TableReads(table: LanceTable) {
  private val scans = ConcurrentHashMap.newKeySet[Seq[Predicate]]()

  def record(pushed: Seq[Predicate]): Unit = scans.add(pushed)

  /** Blind when nothing of the table was scanned (INSERT ... VALUES, an append of other data). */
  def readSet: ReadSet = if (scans.isEmpty) ReadSet.Blind else new PredicateReadSet(table, scans.asScala.toSeq)
}
