package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types._
import sparklance.format.index.vector.VectorMetric

/**
 * The arguments of `vector_search(...)`, lance-spark's names, by name (`k => 10`) or in this order:
 * table, vector_column, query_vector, k, distance_type, filter, nprobes, refine_factor, version
 * (constants, see [[TableFunctionArguments]]).
 * `columns`: the table's columns the answer holds (None: all), which only [[VectorSearches]] takes.
 */
final case class VectorSearchArguments(table: String, column: String, query: Array[Float], k: Int,
    metric: VectorMetric, filter: Option[String], nprobes: Option[Int], refineFactor: Option[Int], version: Option[String],
    columns: Option[Seq[String]] = None)

object VectorSearchArguments {
  val Names: Seq[String] =
    Seq("table", "vector_column", "query_vector", "k", "distance_type", "filter", "nprobes", "refine_factor", "version")
  private val Required = Seq("table", "vector_column", "query_vector")

  private val Spec = TableFunctionArguments(VectorSearchFunction.name, Names, Required)

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): VectorSearchArguments = of(Spec.parse(args, {
    case ("query_vector", e, a: ArrayData) => floats(a, e.dataType)
    case (_, _, other) => other
  }))

  /** The query vector an array constant of type `arrayType` holds, as floats. */
  private def floats(a: ArrayData, arrayType: DataType): Array[Float] = arrayType match {
    case ArrayType(FloatType, _) => a.toFloatArray()
    case ArrayType(DoubleType, _) => a.toDoubleArray().map(_.toFloat)
    case ArrayType(d: DecimalType, _) => (0 until a.numElements()).map(i => a.getDecimal(i, d.precision, d.scale).toDouble.toFloat).toArray
    case ArrayType(IntegerType, _) => a.toIntArray().map(_.toFloat)
    case ArrayType(LongType, _) => a.toLongArray().map(_.toFloat)
    case other => bad(s"argument 'query_vector' must be an array of numbers, got ${other.sql}")
  }

  /**
   * The arguments from their values by name (the names of [[Names]]; a value absent or null takes
   * the default), checked as the table function checks them: `query_vector` is an Array[Float],
   * `k`, `nprobes` and `refine_factor` numbers, the others text (`version` a number or a tag).
   */
  def of(values: Map[String, Any], columns: Option[Seq[String]] = None): VectorSearchArguments = {
    Spec.check(values)
    def value(name: String): Option[Any] = Spec.value(values, name)
    def text(name: String): Option[String] = Spec.text(values, name)
    def positive(name: String): Option[Int] = Spec.positive(values, name)
    val query = value("query_vector") match {
      case Some(q: Array[Float]) => q
      case Some(other) => bad(s"argument 'query_vector' must be an array of numbers, got $other")
      case None => bad("argument 'query_vector' must be an array of numbers, not NULL")
    }
    if (query.isEmpty) bad("argument 'query_vector' is empty")
    VectorSearchArguments(
      table = text("table").getOrElse(bad("argument 'table' is NULL")),
      column = text("vector_column").getOrElse(bad("argument 'vector_column' is NULL")),
      query = query,
      k = positive("k").getOrElse(10),
      metric = text("distance_type").map(metric).getOrElse(VectorMetric.L2),
      filter = text("filter").filter(_.trim.nonEmpty),
      nprobes = positive("nprobes"),
      refineFactor = positive("refine_factor"),
      version = text("version"),
      columns = columns)
  }

  private def metric(name: String): VectorMetric = VectorMetric.find(name.trim).getOrElse(
    bad(s"argument 'distance_type' must be one of ${VectorMetric.all.map(_.name).mkString(", ")}, got '$name'"))

  private[search] def unknown(name: String): Nothing = Spec.unknown(name)
  private[search] def twice(name: String): Nothing = Spec.twice(name)
  private[search] def bad(detail: String): Nothing = Spec.bad(detail)
}
