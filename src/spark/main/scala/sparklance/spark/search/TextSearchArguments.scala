package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.Expression
import sparklance.format.index.text.{FullTextQuery, MatchOperator}

/**
 * The arguments of `text_search(...)`, by name (`k => 20`) or in this order: table, column, query,
 * k, version, filter, prefilter, operator, slop (constants, see [[TableFunctionArguments]]).
 * `columns`: the string columns searched (the `column` argument, one name or a comma-separated
 * list), each through its own INVERTED index, a row scoring its best column's score. `filter`: a
 * SQL condition on the rows; `prefilter`: whether the k best rows are found among the rows that
 * pass it (true) or the k best rows are found first and those that pass kept (false, pylance's
 * default). `operator`: whether a row must hold any (OR) or every (AND) token of the query; a
 * query in double quotes is a phrase, its tokens up to `slop` positions further apart than in the
 * query; a query that is a JSON object is Lance's JSON form of a full-text query (match, phrase,
 * multi_match, boolean), whose columns it names (then `column` may be left out).
 */
final case class TextSearchArguments(table: String, columns: Seq[String], query: String, k: Int, version: Option[String],
    filter: Option[String] = None, prefilter: Boolean = false, operator: MatchOperator = MatchOperator.Or, slop: Int = 0) {
  /** The phrase searched when the query is in double quotes (`'"red shoes"'`), as pylance reads a query string. */
  def phrase: Option[String] = TextSearchArguments.phraseOf(query)

  /**
   * The query in Lance's JSON form (`{"boolean": {...}}`), when it is one; its queries without a
   * column take the `column` argument (one column). A bad one is an IllegalArgumentException.
   */
  def json: Option[FullTextQuery] = if (!FullTextQuery.isJson(query)) None else Some(
    try FullTextQuery.parse(query, columns match { case Seq(one) => Some(one); case _ => None })
    catch { case e: IllegalArgumentException => throw new IllegalArgumentException(s"${TextSearchFunction.name}: argument 'query': ${e.getMessage}", e) })
}

object TextSearchArguments {
  val Names: Seq[String] = Seq("table", "column", "query", "k", "version", "filter", "prefilter", "operator", "slop")
  // `column` may be left out when the query is Lance's JSON form, whose queries name their columns.
  private val Spec = TableFunctionArguments(TextSearchFunction.name, Names, Seq("table", "query"))

  /** Parses `args`; a bad argument is an IllegalArgumentException naming it (LANCE_INVALID_ARGUMENT). */
  def parse(args: Seq[Expression]): TextSearchArguments = {
    val values = Spec.parse(args)
    Spec.check(values)
    def text(name: String): String = Spec.text(values, name).getOrElse(Spec.bad(s"argument '$name' is NULL"))
    val json = FullTextQuery.isJson(text("query"))
    if (!json && !values.contains("column")) Spec.bad("needs the arguments column")
    TextSearchArguments(
      table = text("table"),
      columns = if (json && Spec.value(values, "column").isEmpty) Nil else columnList(text("column"), Spec),
      query = text("query"),
      k = Spec.positive(values, "k").getOrElse(10),
      version = Spec.text(values, "version"),
      filter = filter(values, Spec),
      prefilter = Spec.flag(values, "prefilter").getOrElse(false),
      operator = operator(values, Spec),
      slop = Spec.value(values, "slop").map {
        case n: java.lang.Number if n.longValue() >= 0 && n.longValue() <= Int.MaxValue && n.doubleValue() == n.longValue() =>
          if (phraseOf(text("query")).isEmpty) Spec.bad("argument 'slop' applies to a phrase, a query in double quotes")
          n.intValue()
        case other => Spec.bad(s"argument 'slop' must be a whole number of 0 or more, got $other")
      }.getOrElse(0))
  }

  /** The phrase a query in double quotes holds, as pylance reads a query string (at least 2 characters, both quotes). */
  def phraseOf(query: String): Option[String] =
    if (query.length >= 2 && query.startsWith("\"") && query.endsWith("\"")) Some(query.substring(1, query.length - 1)) else None

  /** `column`'s names: one, or several separated by commas (spaces around them ignored), each once. */
  private[search] def columnList(column: String, spec: TableFunctionArguments): Seq[String] = {
    val names = column.split(",", -1).map(_.trim).toSeq
    if (names.exists(_.isEmpty)) spec.bad(s"argument 'column' must name one column or several separated by commas, got '$column'")
    names.groupBy(_.toLowerCase(java.util.Locale.ROOT)).collectFirst { case (_, same) if same.size > 1 =>
      spec.bad(s"argument 'column' names column '${same.head}' twice")
    }
    names
  }

  /** The `filter` argument: a condition, or None when absent, NULL or blank. */
  private[search] def filter(values: Map[String, Any], spec: TableFunctionArguments): Option[String] =
    spec.text(values, "filter").filter(_.trim.nonEmpty)

  private[search] def operator(values: Map[String, Any], spec: TableFunctionArguments): MatchOperator =
    spec.text(values, "operator").map(name => MatchOperator.find(name).getOrElse(spec.bad(
      s"argument 'operator' must be one of ${MatchOperator.all.mkString(", ")}, got '$name'"))).getOrElse(MatchOperator.Or)
}
