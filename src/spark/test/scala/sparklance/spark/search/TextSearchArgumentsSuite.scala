package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, NamedArgumentExpression}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.index.text.MatchOperator

/** How `text_search` and `hybrid_search` read their query arguments: columns, filter, prefilter, operator. */
class TextSearchArgumentsSuite extends AnyFunSuite {
  private def named(args: (String, Any)*): Seq[Expression] =
    args.map { case (name, value) => NamedArgumentExpression(name, Literal(value)) }

  private val Base = Seq("table" -> "lance.db.t", "column" -> "title", "query" -> "red shoes")

  test("defaults: one column, no filter, a postfilter, OR; positional arguments in the documented order") {
    val a = TextSearchArguments.parse(named(Base: _*))
    assert(a == TextSearchArguments("lance.db.t", Seq("title"), "red shoes", 10, None))
    assert(!a.prefilter && a.filter.isEmpty && a.operator == MatchOperator.Or)
    val positional = TextSearchArguments.parse(Seq("lance.db.t", "title, body", "q", 5, "3", "id > 1", true, "and").map(Literal(_)))
    assert(positional == TextSearchArguments("lance.db.t", Seq("title", "body"), "q", 5, Some("3"), Some("id > 1"),
      prefilter = true, operator = MatchOperator.And))
  }

  test("a comma-separated column list, a filter, prefilter as a boolean or its name, an operator in any case") {
    val a = TextSearchArguments.parse(named(Base.updated(1, "column" -> " title ,body") ++
      Seq("filter" -> "tag = 'a'", "prefilter" -> "TRUE", "operator" -> "And"): _*))
    assert(a.columns == Seq("title", "body") && a.filter.contains("tag = 'a'") && a.prefilter && a.operator == MatchOperator.And)
    assert(TextSearchArguments.parse(named(Base :+ ("filter" -> "  "): _*)).filter.isEmpty)
    assert(!TextSearchArguments.parse(named(Base :+ ("prefilter" -> false): _*)).prefilter)
  }

  test("a query in double quotes is a phrase, as pylance reads a query string") {
    def phrase(query: String) = TextSearchArguments.parse(named(Base.updated(2, "query" -> query): _*)).phrase
    assert(phrase("\"red shoes\"").contains("red shoes") && phrase("\"\"").contains(""))
    assert(TextSearchArguments.parse(named(Base.updated(2, "query" -> "\"red shoes\"") :+ ("slop" -> 2): _*)).slop == 2)
    def error(args: (String, Any)*) = intercept[IllegalArgumentException](TextSearchArguments.parse(named(args: _*))).getMessage
    assert(error(Base :+ ("slop" -> 1): _*).contains("argument 'slop' applies to a phrase, a query in double quotes"))
    assert(error(Base.updated(2, "query" -> "\"a b\"") :+ ("slop" -> -1): _*).contains("argument 'slop' must be a whole number of 0 or more"))
    assert(phrase("red shoes").isEmpty && phrase("\"red shoes").isEmpty && phrase(" \"red shoes\"").isEmpty && phrase("\"").isEmpty)
  }

  test("bad column lists, prefilters and operators are named") {
    def error(args: (String, Any)*): String =
      intercept[IllegalArgumentException](TextSearchArguments.parse(named(args: _*))).getMessage
    assert(error(Base.updated(1, "column" -> "title,"): _*).contains("argument 'column' must name one column or several"))
    assert(error(Base.updated(1, "column" -> "a,b,A"): _*).contains("argument 'column' names column 'a' twice"))
    assert(error(Base :+ ("prefilter" -> 1): _*).contains("argument 'prefilter' must be true or false, got 1"))
    assert(error(Base :+ ("operator" -> "NEAR"): _*).contains("argument 'operator' must be one of OR, AND, got 'NEAR'"))
  }

  test("hybrid_search: the filter reaches both sides, the text side as a prefilter, with the operator and columns") {
    val args = named("table" -> "lance.db.t", "vector_column" -> "emb", "column" -> "title,body", "query" -> "red",
      "filter" -> "id > 3", "operator" -> "and") :+ NamedArgumentExpression("query_vector", Literal.create(Array(1f, 2f)))
    val h = HybridSearchArguments.parse(args)
    assert(h.vector.filter.contains("id > 3") && h.text.filter.contains("id > 3") && h.text.prefilter)
    assert(h.text.columns == Seq("title", "body") && h.text.operator == MatchOperator.And)
  }
}
