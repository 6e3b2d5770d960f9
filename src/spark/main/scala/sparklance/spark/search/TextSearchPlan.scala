package sparklance.spark.search

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.types.StringType
import scala.util.Using
import sparklance.format.index.text.TextSearch
import sparklance.spark.Allocators

/**
 * How `text_search` finds its rows: the driver searches the column's INVERTED index as pylance's
 * `full_text_query` does ([[TextSearch]]: BM25 over every segment, fragments the index does not
 * cover tokenized at query time, deleted rows left out), and the rows of its answer are read by
 * row id ([[HitRows.plan]]). There is no search without an index: BM25's statistics are the
 * index's.
 */
final case class TextSearchPlan(searched: SearchedTable, args: TextSearchArguments) {

  /** The k best matches, best first (BM25 score, then row id): the answer's rows, as a list. */
  def hits: Seq[HitRows.Hit] = {
    val field = searched.field(args.column)
    if (field.dataType != StringType) throw new IllegalArgumentException(
      s"${searched.function}: column '${field.name}' of ${args.table} is ${field.dataType.sql}, not a string column")
    val table = searched.table
    Using.resource(Allocators.child(searched.function)) { allocator =>
      Using.resource(new TextSearch(table.dataset.storage, table.snapshot, field.name, allocator)) { search =>
        search.search(args.query, args.k).map(h => HitRows.Hit(h.rowId, search.address(h.rowId), h.score))
      }
    }
  }

  def logicalPlan: LogicalPlan = HitRows.plan(searched, searched.schema, hits, TextSearchPlan.ScoreColumn)
}

object TextSearchPlan {
  /** `text_search`'s plan: the table its arguments name, at their version. */
  def apply(spark: SparkSession, args: TextSearchArguments): TextSearchPlan =
    TextSearchPlan(SearchedTable(spark, TextSearchFunction.name, args.table, args.version), args)

  /** The score column of the answer, as pylance names it. */
  val ScoreColumn = "_score"
}
