package sparklance.spark.search

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{ApplyFunctionExpression, Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction
import org.apache.spark.sql.connector.expressions.UserDefinedScalarFunc
import org.apache.spark.sql.types.{BooleanType, DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.index.text.TextAnalyzer
import sparklance.spark.errors.LanceErrors

/**
 * `lance_match(text, query)`: whether `text` holds at least one of the tokens of `query` (Lance's
 * plain match query, the OR of the query's tokens), both tokenized by one analyzer: that of the
 * INVERTED index on the column, once [[TextMatchIndexRule]] has bound the call to it, else
 * pylance's default one. NULL text gives NULL. A Spark `ScalarFunction` applied by Spark's own
 * expression (`ApplyFunctionExpression`), because that is the form Spark hands a scan as a
 * predicate (`BOOLEAN_EXPRESSION` of a user-defined function), which lets the scan read only the
 * rows the index names ([[sparklance.spark.scan.DataFilters]]).
 *
 * `binding`: the index the call was bound to and its analyzer `params` (JSON, `{}` for the
 * defaults); `checked` records that the rule has looked the column up.
 */
final case class TextMatchFunction(binding: TextMatchFunction.Binding, checked: Boolean)
    extends ScalarFunction[java.lang.Boolean] {
  override def inputTypes(): Array[DataType] = Array(StringType, StringType)
  override def resultType(): DataType = BooleanType
  override def name(): String = TextMatchFunction.Name
  override def canonicalName(): String = TextMatchFunction.canonical(binding)
  override def isResultNullable: Boolean = true
  // What plans show of the call (Spark prints the function object as its first argument).
  override def toString: String = binding.index.fold(s"$name, default tokenizer")(i => s"$name, tokenizer of INVERTED index $i")

  @transient private lazy val analyzer: TextAnalyzer = binding.analyzer
  // The query is a constant: its tokens are made once.
  @transient private var query: UTF8String = _
  @transient private var queryTokens: Set[String] = Set.empty

  override def produceResult(input: InternalRow): java.lang.Boolean = {
    if (input.isNullAt(0) || input.isNullAt(1)) return null
    val q = input.getUTF8String(1)
    if (query == null || query != q) { queryTokens = analyzer.tokens(q.toString).toSet; query = q.clone() }
    if (queryTokens.isEmpty) return false
    java.lang.Boolean.valueOf(analyzer.tokens(input.getUTF8String(0).toString).exists(queryTokens.contains))
  }
}

object TextMatchFunction {
  val Name = "lance_match"
  private val Prefix = "sparklance.lance_match"

  /** The analyzer a call tokenizes with: `index`'s (its `params`), or pylance's defaults (`{}`). */
  final case class Binding(index: Option[String], params: String) {
    def analyzer: TextAnalyzer =
      TextAnalyzer.parse(params, index.fold("of lance_match (defaults)")(i => s"'$i' of lance_match"))
  }
  val Default: Binding = Binding(None, "{}")

  private val json = new ObjectMapper()

  /** The function's canonical name: the analyzer is part of what it computes. */
  def canonical(b: Binding): String = b.index.fold(Prefix) { index =>
    val node = JsonNodeFactory.instance.objectNode()
    node.put("index", index)
    node.put("params", b.params)
    s"$Prefix:${json.writeValueAsString(node)}"
  }

  /** The binding of a pushed call of this function; None for another function. */
  def binding(f: UserDefinedScalarFunc): Option[Binding] =
    if (f.name() != Name) None
    else if (f.canonicalName() == Prefix) Some(Default)
    else if (f.canonicalName().startsWith(Prefix + ":")) {
      val node = json.readTree(f.canonicalName().substring(Prefix.length + 1))
      Some(Binding(Some(node.get("index").asText), node.get("params").asText))
    } else None

  private def bad(detail: String): Nothing = throw new IllegalArgumentException(s"$Name $detail")

  /** The call `lance_match(args)`; a bad argument is LANCE_INVALID_ARGUMENT. */
  def build(args: Seq[Expression]): Expression = LanceErrors.convertingArguments() {
    args match {
      case Seq(text, query) =>
        if (!text.dataType.isInstanceOf[StringType])
          bad(s"takes a string column as its first argument, got ${text.sql} of type ${text.dataType.sql}")
        if (!query.dataType.isInstanceOf[StringType] || !query.foldable)
          bad(s"takes a constant string as its query (second argument), got ${query.sql}")
        val q = query.eval()
        if (q == null) bad("query (second argument) is NULL")
        ApplyFunctionExpression(TextMatchFunction(Default, checked = false), Seq(text, Literal(q, StringType)))
      case _ => bad(s"takes 2 arguments (a string column and a constant query), got ${args.size}")
    }
  }

  def register(extensions: SparkSessionExtensions): Unit = extensions.injectFunction((FunctionIdentifier(Name),
    new ExpressionInfo(getClass.getName.stripSuffix("$"), null, Name,
      "lance_match(text, query) - true when text holds one of query's tokens (Lance's full-text match)", ""), build _))
}
