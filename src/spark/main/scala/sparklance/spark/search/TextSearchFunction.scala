package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession

/**
 * The table function `text_search(table => 'lance.db.t', column => 'description', query => 'red
 * shoes', k => 20, version => 3)`: the k rows of the table that best match the query through the
 * column's INVERTED index, with their BM25 `_score`, best first (ties by row id).
 */
object TextSearchFunction extends SearchTableFunction("text_search",
    "_FUNC_(table, column, query[, k, version, filter, prefilter, operator, slop]) - the k rows of a Lance table best " +
      "matching a full-text query " +
      "through the column's INVERTED index, with their BM25 _score.") {
  protected def plan(spark: SparkSession, args: Seq[Expression]): LogicalPlan =
    TextSearchPlan(spark, TextSearchArguments.parse(args)).logicalPlan
}
