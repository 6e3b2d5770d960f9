package sparklance.spark.search

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.functions.col
import org.roaringbitmap.longlong.Roaring64NavigableMap
import sparklance.spark.LanceTable

/**
 * A search's `filter` argument: a SQL condition on the searched table's rows, evaluated by Spark
 * over those rows (the version searched), never by a hand-written evaluator. What it yields is
 * the ids (`_rowid`, as the searches' hits carry them) of the rows that pass.
 */
object SearchFilter {
  /**
   * The rows of `searched` that pass `filter`, analyzed now: a condition Spark cannot parse or
   * resolve, or that is not a boolean, is an IllegalArgumentException naming the function, the
   * argument and the condition (LANCE_INVALID_ARGUMENT).
   */
  def where(searched: SearchedTable, filter: String, rows: DataFrame): DataFrame =
    try rows.where(filter)
    catch {
      case e: AnalysisException => throw new IllegalArgumentException(
        s"${searched.function}: argument 'filter' ($filter) is not a condition on the rows of ${searched.name}: ${e.getMessage}", e)
    }

  /** Checks `filter` without running it (a bad one fails as [[where]] says). */
  def check(searched: SearchedTable, filter: String): Unit = where(searched, filter, searched.rows)

  /** The ids of every row of `searched` that passes `filter` (a prefilter), gathered by a Spark job as one bitmap. */
  def passing(searched: SearchedTable, filter: String): Roaring64NavigableMap =
    ids(searched, where(searched, filter, searched.rows))

  /** Which of `candidates` (row ids) pass `filter` (a postfilter): a scan of those rows only. */
  def passing(searched: SearchedTable, filter: String, candidates: Seq[Long]): Roaring64NavigableMap =
    if (candidates.isEmpty) new Roaring64NavigableMap()
    else ids(searched, where(searched, filter, searched.rows.where(col(LanceTable.RowId).isin(candidates: _*))))

  private def ids(searched: SearchedTable, rows: DataFrame): Roaring64NavigableMap =
    PassingRowIds.of(searched.spark, rows.select(col(LanceTable.RowId)).queryExecution.analyzed)
}
