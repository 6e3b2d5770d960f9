package sparklance.spark.search

import java.util.Locale
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.util.ArrayData

/**
 * The arguments of `hybrid_search(...)`, by name (`k => 10`) or in this order: table,
 * vector_column, query_vector, column, query, k, distance_type, nprobes, refine_factor, rrf_k,
 * return_score, version, filter, operator (constants, see [[TableFunctionArguments]]). `vector`
 * and `text` are the two searches it fuses, each of k rows of the same table version, `filter` a
 * prefilter of both (LanceDB's hybrid query applies its filter to each side); `rrfK` is the
 * constant of the fusion (LanceDB's `RRFReranker(K=60)`), `allScores` whether the answer holds
 * each side's own `_distance` and `_score` (LanceDB's `return_score="all"`) besides
 * `_relevance_score`.
 */
final case class HybridSearchArguments(vector: VectorSearchArguments, text: TextSearchArguments, rrfK: Int, allScores: Boolean)

object HybridSearchArguments {
  val Names: Seq[String] = Seq("table", "vector_column", "query_vector", "column", "query", "k", "distance_type",
    "nprobes", "refine_factor", "rrf_k", "return_score", "version", "filter", "operator")
  private val Spec = TableFunctionArguments(HybridSearchFunction.name, Names,
    Seq("table", "vector_column", "query_vector", "column", "query"))
  /** The arguments the vector side takes, as `vector_search` names them. */
  private val VectorNames = Set("table", "vector_column", "query_vector", "k", "distance_type", "nprobes", "refine_factor", "version", "filter")
  val DefaultRrfK = 60

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): HybridSearchArguments = {
    val values = Spec.parse(args, {
      case ("query_vector", e, a: ArrayData) => VectorSearchArguments.floats(a, e.dataType)
      case (_, _, other) => other
    })
    Spec.check(values)
    val vector = VectorSearchArguments.of(values.filter { case (name, _) => VectorNames.contains(name) },
      function = HybridSearchFunction.name)
    def text(name: String): String = Spec.text(values, name).getOrElse(Spec.bad(s"argument '$name' is NULL"))
    val allScores = Spec.text(values, "return_score").map(_.trim.toLowerCase(Locale.ROOT)) match {
      case None | Some("relevance") => false
      case Some("all") => true
      case Some(other) => Spec.bad(s"argument 'return_score' must be 'relevance' or 'all', got '$other'")
    }
    HybridSearchArguments(
      vector = vector,
      text = TextSearchArguments(vector.table, TextSearchArguments.columnList(text("column"), Spec), text("query"),
        vector.k, vector.version, filter = TextSearchArguments.filter(values, Spec), prefilter = true,
        operator = TextSearchArguments.operator(values, Spec)),
      rrfK = Spec.positive(values, "rrf_k").getOrElse(DefaultRrfK),
      allScores = allScores)
  }
}
