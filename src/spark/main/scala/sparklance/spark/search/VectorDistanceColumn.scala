package sparklance.spark.search

import org.apache.spark.sql.Column
import org.apache.spark.sql.functions.{call_function, lit, typedLit}
import sparklance.format.index.vector.VectorMetric

/**
 * A [[VectorMetric]] as a Spark column, from Spark's own vector functions, in pylance's units:
 * `vector_l2_distance` squared, `1 - vector_cosine_similarity`, `1 - vector_inner_product`.
 */
object VectorDistanceColumn {
  def apply(metric: VectorMetric, vectors: Column, query: Array[Float]): Column = {
    val q = typedLit(query)
    metric match {
      case VectorMetric.L2 =>
        val d = call_function("vector_l2_distance", vectors, q)
        d * d
      case VectorMetric.Cosine => lit(1.0f) - call_function("vector_cosine_similarity", vectors, q)
      case VectorMetric.Dot => lit(1.0f) - call_function("vector_inner_product", vectors, q)
    }
  }
}
