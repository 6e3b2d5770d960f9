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
final case class TextSearchPlan(spark: SparkSession, args: TextSearchArguments) {
  private val searched = SearchedTable(spark, TextSearchFunction.name, args.table, args.version)

  def logicalPlan: LogicalPlan = {
    val field = searched.field(args.column)
    if (field.dataType != StringType) throw new IllegalArgumentException(
      s"${TextSearchFunction.name}: column '${field.name}' of ${args.table} is ${field.dataType.sql}, not a string column")
    val table = searched.table
    val hits = Using.resource(Allocators.child(TextSearchFunction.name)) { allocator =>
      Using.resource(new TextSearch(table.dataset.storage, table.snapshot, field.name, allocator)) { search =>
        search.search(args.query, args.k).map(h => HitRows.Hit(h.rowId, search.address(h.rowId), h.score))
      }
    }
    HitRows.plan(searched, searched.schema, hits, TextSearchPlan.ScoreColumn)
  }
}

object TextSearchPlan {
  /** The score column of the answer, as pylance names it. */
  val ScoreColumn = "_score"
}
