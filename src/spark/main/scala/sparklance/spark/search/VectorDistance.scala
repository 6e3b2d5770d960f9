package sparklance.spark.search

import java.util.Locale
import org.apache.spark.sql.Column
import org.apache.spark.sql.functions.{call_function, lit, typedLit}

/**
 * A distance of vector search, in pylance's units (`_distance`): squared L2, 1 - cosine
 * similarity, 1 - dot product. Smaller is nearer for each.
 */
sealed abstract class VectorDistance(val name: String) {
  /** The distance of `vectors` to `query`, from Spark's own vector functions. */
  def of(vectors: Column, query: Array[Float]): Column
}

object VectorDistance {
  case object L2 extends VectorDistance("l2") {
    def of(vectors: Column, query: Array[Float]): Column = {
      val d = call_function("vector_l2_distance", vectors, typedLit(query))
      d * d
    }
  }
  case object Cosine extends VectorDistance("cosine") {
    def of(vectors: Column, query: Array[Float]): Column = lit(1.0f) - call_function("vector_cosine_similarity", vectors, typedLit(query))
  }
  case object Dot extends VectorDistance("dot") {
    def of(vectors: Column, query: Array[Float]): Column = lit(1.0f) - call_function("vector_inner_product", vectors, typedLit(query))
  }

  val values: Seq[VectorDistance] = Seq(L2, Cosine, Dot)

  def parse(text: String): VectorDistance = {
    val wanted = text.trim.toLowerCase(Locale.ROOT) match {
      case "euclidean" => "l2"
      case other => other
    }
    values.find(_.name == wanted).getOrElse(throw new IllegalArgumentException(
      s"vector_search argument 'distance_type' must be one of ${values.map(_.name).mkString(", ")}, got '$text'"))
  }
}
