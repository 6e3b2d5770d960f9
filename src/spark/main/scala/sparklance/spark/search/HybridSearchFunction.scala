package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession

/**
 * The table function `hybrid_search(table => 'lance.db.t', vector_column => 'emb', query_vector =>
 * array(...), column => 'body', query => 'red shoes', k => 10, rrf_k => 60, return_score => 'all',
 * version => 3)`: the k nearest rows of `vector_search` and the k best matches of `text_search`
 * fused by reciprocal rank fusion as LanceDB's default hybrid query does ([[ReciprocalRankFusion]]),
 * the k most relevant, with their `_relevance_score`.
 */
object HybridSearchFunction extends SearchTableFunction("hybrid_search",
    "_FUNC_(table, vector_column, query_vector, column, query[, k, distance_type, nprobes, refine_factor, rrf_k, " +
      "return_score, version, filter, operator]) - the k rows of a Lance table most relevant to a vector and a full-text query, " +
      "their two result lists fused by reciprocal rank fusion, with their _relevance_score.") {
  protected def plan(spark: SparkSession, args: Seq[Expression]): LogicalPlan =
    HybridSearchPlan(spark, HybridSearchArguments.parse(args)).logicalPlan
}
