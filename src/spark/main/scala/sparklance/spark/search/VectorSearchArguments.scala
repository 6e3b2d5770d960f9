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
 */
final case class VectorSearchArguments(table: String, column: String, query: Array[Float], k: Int,
    metric: VectorMetric, filter: Option[String], nprobes: Option[Int], refineFactor: Option[Int], version: Option[String])

object VectorSearchArguments {
  val Names: Seq[String] =
    Seq("table", "vector_column", "query_vector", "k", "distance_type", "filter", "nprobes", "refine_factor", "version")
  private val Required = Set("table", "vector_column", "query_vector")

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): VectorSearchArguments = {
    val (named, positional) = args.partition(_.isInstanceOf[NamedArgumentExpression])
    if (positional.size > Names.size) bad(s"takes at most ${Names.size} arguments (${Names.mkString(", ")}), got ${positional.size}")
    val byName = positional.zip(Names).map { case (e, n) => n -> e }.toMap ++ named.map { case NamedArgumentExpression(key, value) =>
      val name = key.toLowerCase(Locale.ROOT)
      if (!Names.contains(name)) bad(s"has no argument '$key'; its arguments are ${Names.mkString(", ")}")
      if (positional.size > Names.indexOf(name)) bad(s"argument '$name' is given twice")
      name -> value
    }
    val missing = Required -- byName.keySet
    if (missing.nonEmpty) bad(s"needs the arguments ${missing.toSeq.sorted.mkString(", ")}")
    def value(name: String): Option[Any] = byName.get(name).map { e =>
      if (!e.foldable) bad(s"argument '$name' must be a constant, got ${e.sql}")
      e.eval()
    }.filter(_ != null)
    def text(name: String): Option[String] = value(name).map(_.toString)
    def positive(name: String): Option[Int] = byName.get(name).flatMap(_ => value(name)).map {
      case n: java.lang.Number if n.longValue() > 0 && n.longValue() <= Int.MaxValue && n.doubleValue() == n.longValue() => n.intValue()
      case other => bad(s"argument '$name' must be a positive integer, got $other")
    }
    val vectorType = byName("query_vector").dataType
    val query = value("query_vector") match {
      case Some(a: ArrayData) => vectorType match {
        case ArrayType(FloatType, _) => a.toFloatArray()
        case ArrayType(DoubleType, _) => a.toDoubleArray().map(_.toFloat)
        case ArrayType(d: DecimalType, _) => (0 until a.numElements()).map(i => a.getDecimal(i, d.precision, d.scale).toDouble.toFloat).toArray
        case ArrayType(IntegerType, _) => a.toIntArray().map(_.toFloat)
        case ArrayType(LongType, _) => a.toLongArray().map(_.toFloat)
        case other => bad(s"argument 'query_vector' must be an array of numbers, got ${other.sql}")
      }
      case _ => bad("argument 'query_vector' must be an array of numbers, not NULL")
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
      version = text("version"))
  }

  private def metric(name: String): VectorMetric = VectorMetric.find(name.trim).getOrElse(
    bad(s"argument 'distance_type' must be one of ${VectorMetric.all.map(_.name).mkString(", ")}, got '$name'"))

  private def bad(detail: String): Nothing = throw new IllegalArgumentException(s"vector_search $detail")
}
