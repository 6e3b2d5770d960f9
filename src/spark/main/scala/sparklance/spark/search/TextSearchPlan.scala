package sparklance.spark.search

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.types.StringType
import scala.util.Using
import sparklance.format.index.text.{FullTextQuery, TextSearch}
import sparklance.spark.Allocators

/**
 * How `text_search` finds its rows: the driver searches each column's INVERTED index as pylance's
 * `full_text_query` does ([[TextSearch]]: BM25 over every segment, fragments the index does not
 * cover tokenized at query time, deleted rows left out), and the rows of its answer are read by
 * row id ([[HitRows.plan]]). There is no search without an index: BM25's statistics are the
 * index's.
 *
 * Several columns are searched as Lance's `MultiMatchQuery` (and pylance's `columns=[...]`):
 * each column's k best rows by its own index and statistics, a row scoring the best of its
 * columns' scores, the k best of those kept. A `filter` is evaluated by Spark on the table's rows:
 * as a prefilter the ids of the passing rows restrict each column's search; as a postfilter (the
 * default, as pylance's) the k best rows are found first and those that pass are kept, so the
 * answer may hold fewer than k rows. A query in double quotes is a phrase (one column, its index
 * built with positions), as pylance reads a query string. A query in Lance's JSON form
 * ([[FullTextQuery]]: match, phrase, multi_match, boolean) is evaluated clause by clause.
 */
final case class TextSearchPlan(searched: SearchedTable, args: TextSearchArguments) {

  /** The answer's rows, best first (BM25 score, then row id), as a list. */
  def hits: Seq[HitRows.Hit] = {
    val json = args.json
    val fields = json.fold(args.columns)(_.columns).map(searched.field)
    fields.foreach { field =>
      if (field.dataType != StringType) throw new IllegalArgumentException(
        s"${searched.function}: column '${field.name}' of ${args.table} is ${field.dataType.sql}, not a string column")
    }
    if (args.phrase.nonEmpty && fields.size > 1) throw new IllegalArgumentException(
      s"${searched.function}: a phrase query (a query in double quotes) searches one column, not ${args.columns.mkString(", ")}")
    args.filter.foreach(f => SearchFilter.check(searched, f))
    val allowed = if (args.prefilter) args.filter.map { f =>
      val ids = SearchFilter.passing(searched, f)
      (id: Long) => ids.contains(id)
    } else None
    val table = searched.table
    val best = Using.resource(Allocators.child(searched.function)) { allocator =>
      val opened = scala.collection.mutable.LinkedHashMap.empty[String, TextSearch]
      // Each column's index opened once (by the name the table spells), closed with the search.
      def search(column: String): TextSearch = {
        val name = searched.field(column).name
        opened.getOrElseUpdate(name, new TextSearch(table.dataset.storage, table.snapshot, name, allocator))
      }
      try {
        val found = json match {
          case Some(query) => FullTextQuery.search(query, search, args.k, allowed)
          case None => fields.flatMap { field =>
            val s = search(field.name)
            args.phrase.fold(s.search(args.query, args.k, args.operator, allowed))(s.phrase(_, args.k, allowed, args.slop))
          }.groupBy(_.rowId).values.map(_.maxBy(_.score)).toSeq.sortBy(h => (-h.score, h.rowId)).take(args.k)
        }
        val any = opened.values.head
        found.map(h => HitRows.Hit(h.rowId, any.address(h.rowId), h.score))
      } finally sparklance.format.Resources.closeAll(opened.values.toSeq)
    }
    args.filter.filterNot(_ => args.prefilter).fold(best) { f =>
      val passing = SearchFilter.passing(searched, f, best.map(_.rowId))
      best.filter(h => passing.contains(h.rowId))
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
