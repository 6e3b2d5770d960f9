package sparklance.format.index.text

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.index.text.FullTextQuery._

/** Lance's JSON form of full-text queries, as sparklance reads it (scores: integration-tests/test_text_search_queries.py). */
class FullTextQuerySuite extends AnyFunSuite {
  private def m(column: String, terms: String, more: String = "") =
    s"""{"match": {"column": "$column", "terms": "$terms", "fuzziness": 0$more}}"""

  test("match, phrase, multi_match and nested boolean queries; a query without a column takes the default one") {
    assert(parse(m("t", "red shoes", """, "operator": "and", "boost": 2.5"""), None) == Match("t", "red shoes", MatchOperator.And, 2.5f))
    assert(parse("""{"match": {"terms": "x", "fuzziness": 0}}""", Some("body")) == Match("body", "x", MatchOperator.Or, 1f))
    assert(parse("""{"phrase": {"column": "t", "terms": "a b", "slop": 0}}""", None) == Phrase("t", "a b"))
    val multi = s"""{"multi_match": {"match_queries": [${m("a", "x").stripPrefix("""{"match": """).stripSuffix("}")}, {"column": "b", "terms": "x", "fuzziness": 0}]}}"""
    assert(parse(multi, None) == MultiMatch(Seq(Match("a", "x", MatchOperator.Or, 1f), Match("b", "x", MatchOperator.Or, 1f))))
    val bool = parse(s"""{"boolean": {"must": [${m("a", "x")}], "should": [{"boolean": {"should": [${m("b", "y")}]}}], "must_not": []}}""", None)
    assert(bool == BooleanQuery(Seq(Match("a", "x", MatchOperator.Or, 1f)), Seq(BooleanQuery(Nil, Seq(Match("b", "y", MatchOperator.Or, 1f)), Nil)), Nil))
    assert(bool.columns == Seq("a", "b"))
    assert(isJson(" {\"match\": {}}") && !isJson("red shoes") && !isJson("\"red shoes\""))
  }

  test("what sparklance does not evaluate, or cannot read, is named") {
    def error(json: String, column: Option[String] = None) = intercept[IllegalArgumentException](parse(json, column)).getMessage
    assert(error("""{"match": {"column": "t", "terms": "x"}}""").contains("fuzziness absent (automatic, as Lance reads it) is not supported"))
    assert(error("""{"match": {"column": "t", "terms": "x", "fuzziness": 1}}""").contains("fuzziness 1 is not supported"))
    assert(error("""{"match": {"terms": "x", "fuzziness": 0}}""").contains("match names no column, and the search gives none"))
    assert(error("""{"match": {"column": "t", "terms": "x", "fuzziness": 0, "operator": "xor"}}""").contains("operator \"xor\" is not one of OR, AND"))
    assert(error("""{"phrase": {"column": "t", "terms": "x", "slop": -1}}""").contains("slop -1 is not a whole number of 0 or more"))
    assert(parse("""{"phrase": {"column": "t", "terms": "x", "slop": 2}}""", None) == Phrase("t", "x", 2))
    assert(error("""{"combined_fields": {}}""").contains("type 'combined_fields' is not supported"))
    assert(error("""{"match": {}, "phrase": {}}""").contains("must be a JSON object with one key"))
    assert(error("""{"multi_match": {"match_queries": []}}""").contains("multi_match has no match_queries"))
    assert(error("""{"boolean": {"must": {}}}""").contains("boolean: 'must' must be a list"))
    assert(error("""[1]""").contains("must be a JSON object"))
    assert(error("""{"match" """).contains("is not valid JSON"))
  }
}
