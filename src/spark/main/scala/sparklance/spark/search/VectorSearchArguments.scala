package sparklance.spark.search

import java.util.Locale
import org.apache.spark.sql.catalyst.expressions.{Expression, NamedArgumentExpression}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types._
import sparklance.format.index.vector.VectorMetric

/**
 * The arguments of `vector_search(...)`, lance-spark's names, by name (`k => 10`) or in this order:
 * table, vector_column, query_vector, k, distance_type, filter, nprobes, refine_factor, version.
 * Every argument is a constant: the search is planned once, when the statement is analyzed.
 * `columns`: the table's columns the answer holds (None: all), which only [[VectorSearches]] takes.
 */
final case class VectorSearchArguments(table: String, column: String, query: Array[Float], k: Int,
    metric: VectorMetric, filter: Option[String], nprobes: Option[Int], refineFactor: Option[Int], version: Option[String],
    columns: Option[Seq[String]] = None)

object VectorSearchArguments {
  val Names: Seq[String] =
    Seq("table", "vector_column", "query_vector", "k", "distance_type", "filter", "nprobes", "refine_factor", "version")
  private val Required = Seq("table", "vector_column", "query_vector")

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): VectorSearchArguments = {
    val (named, positional) = args.partition(_.isInstanceOf[NamedArgumentExpression])
    if (positional.size > Names.size) bad(s"takes at most ${Names.size} arguments (${Names.mkString(", ")}), got ${positional.size}")
    val byName = positional.zip(Names).map { case (e, n) => n -> e }.toMap ++ named.map { case NamedArgumentExpression(key, value) =>
      val name = key.toLowerCase(Locale.ROOT)
      if (!Names.contains(name)) unknown(key)
      if (positional.size > Names.indexOf(name)) twice(name)
      name -> value
    }
    val values = byName.map { case (name, e) =>
      if (!e.foldable) bad(s"argument '$name' must be a constant, got ${e.sql}")
      name -> (e.eval() match {
        case a: ArrayData if name == "query_vector" => floats(a, e.dataType)
        case other => other
      })
    }
    of(values)
  }

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
    values.keys.find(!Names.contains(_)).foreach(unknown)
    val missing = Required.filterNot(values.contains)
    if (missing.nonEmpty) bad(s"needs the arguments ${missing.sorted.mkString(", ")}")
    def value(name: String): Option[Any] = values.get(name).filter(_ != null)
    def text(name: String): Option[String] = value(name).map(_.toString)
    def positive(name: String): Option[Int] = value(name).map {
      case n: java.lang.Number if n.longValue() > 0 && n.longValue() <= Int.MaxValue && n.doubleValue() == n.longValue() => n.intValue()
      case other => bad(s"argument '$name' must be a positive integer, got $other")
    }
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

  private[search] def unknown(name: String): Nothing = bad(s"has no argument '$name'; its arguments are ${Names.mkString(", ")}")
  private[search] def twice(name: String): Nothing = bad(s"argument '$name' is given twice")

  private[search] def bad(detail: String): Nothing = throw new IllegalArgumentException(s"vector_search $detail")
}
