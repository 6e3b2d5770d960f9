package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession

/**
 * The table function `vector_search(table => 'lance.db.t', vector_column => 'emb', query_vector =>
 * array(...), k => 10, distance_type => 'cosine', filter => 'category = 1', nprobes => 20,
 * refine_factor => 2, version => 3)`: the k rows of the table nearest the query, with their
 * `_distance`, nearest first (ties by row id, as pylance). `filter` is a prefilter: the answer is
 * the k nearest rows that pass it.
 */
object VectorSearchFunction extends SearchTableFunction("vector_search",
    "_FUNC_(table, vector_column, query_vector[, k, distance_type, filter, nprobes, refine_factor, version]) - " +
      "the k rows of a Lance table nearest a query vector, with their _distance.") {
  protected def plan(spark: SparkSession, args: Seq[Expression]): LogicalPlan =
    VectorSearchPlan(spark, VectorSearchArguments.parse(args)).logicalPlan
}
