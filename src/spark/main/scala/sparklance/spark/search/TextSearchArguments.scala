package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression

/**
 * The arguments of `text_search(...)`, by name (`k => 20`) or in this order: table, column, query,
 * k, version (constants, see [[TableFunctionArguments]]).
 */
final case class TextSearchArguments(table: String, column: String, query: String, k: Int, version: Option[String])

object TextSearchArguments {
  val Names: Seq[String] = Seq("table", "column", "query", "k", "version")
  private val Spec = TableFunctionArguments(TextSearchFunction.name, Names, Seq("table", "column", "query"))

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): TextSearchArguments = {
    val values = Spec.parse(args)
    Spec.check(values)
    def text(name: String): String = Spec.text(values, name).getOrElse(Spec.bad(s"argument '$name' is NULL"))
    TextSearchArguments(
      table = text("table"),
      column = text("column"),
      query = text("query"),
      k = Spec.positive(values, "k").getOrElse(10),
      version = Spec.text(values, "version"))
  }
}
