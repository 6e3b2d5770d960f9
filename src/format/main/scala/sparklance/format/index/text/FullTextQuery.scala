package sparklance.format.index.text

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import scala.jdk.CollectionConverters._

/**
 * A full-text query as Lance models it (`FtsQuery`), in the JSON form Lance's query parser reads
 * (`lance-index` `scalar/inverted/parser.rs`): `{"match": {"column": "body", "terms": "red shoes",
 * "operator": "AND", "boost": 2.0, "fuzziness": 0}}`, `{"phrase": {"column": "body", "terms": "red
 * shoes"}}`, `{"multi_match": {"match_queries": [match, ...]}}` and `{"boolean": {"must": [...],
 * "should": [...], "must_not": [...]}}`. Scores as pylance 14 gives them (docs/format-inverted-index.md):
 * a match is [[TextSearch.search]] times its boost, a phrase [[TextSearch.phrase]], a multi-match
 * the best of its matches, a boolean query the sum of its MUST and matching SHOULD clauses' scores
 * over the rows that match every MUST clause (or, without one, some SHOULD clause) and no MUST_NOT
 * clause.
 */
sealed trait FullTextQuery {
  /** The columns the query searches. */
  def columns: Seq[String]
}

object FullTextQuery {
  final case class Match(column: String, terms: String, operator: MatchOperator, boost: Float) extends FullTextQuery {
    def columns: Seq[String] = Seq(column)
  }
  final case class Phrase(column: String, terms: String, slop: Int = 0) extends FullTextQuery {
    def columns: Seq[String] = Seq(column)
  }
  final case class MultiMatch(matches: Seq[Match]) extends FullTextQuery {
    def columns: Seq[String] = matches.flatMap(_.columns).distinct
  }
  final case class BooleanQuery(must: Seq[FullTextQuery], should: Seq[FullTextQuery], mustNot: Seq[FullTextQuery]) extends FullTextQuery {
    def columns: Seq[String] = (must ++ should ++ mustNot).flatMap(_.columns).distinct
  }

  /** Whether `text` is a JSON query (an object), not query text. */
  def isJson(text: String): Boolean = text.trim.startsWith("{")

  /**
   * Parses Lance's JSON form; a query without a column takes `column` (if given). Malformed JSON,
   * an unknown query type or key, or what sparklance does not evaluate (fuzzy matching: Lance
   * reads an absent `fuzziness` as automatic, so a match must say `"fuzziness": 0`; boost and
   * combined_fields queries) is an IllegalArgumentException naming it.
   */
  def parse(json: String, column: Option[String]): FullTextQuery = {
    val root = try new ObjectMapper().readTree(json) catch {
      case e: Exception => bad(s"is not valid JSON: ${e.getMessage.linesIterator.next()}")
    }
    query(root, column)
  }

  private def bad(detail: String): Nothing = throw new IllegalArgumentException(s"full-text query $detail")

  private def query(node: JsonNode, column: Option[String]): FullTextQuery = {
    if (node == null || !node.isObject || node.size != 1) bad(s"must be a JSON object with one key (match, phrase, multi_match, boolean), got $node")
    val (kind, body) = node.fields().asScala.map(e => e.getKey -> e.getValue).next()
    if (!body.isObject) bad(s"'$kind' must hold a JSON object, got $body")
    kind match {
      case "match" => matchQuery(body, column)
      case "phrase" =>
        keys(body, "phrase", Set("column", "terms", "slop"))
        val slop = Option(body.get("slop")).filterNot(_.isNull).map { s =>
          if (!s.isIntegralNumber || !s.canConvertToInt || s.asInt < 0) bad(s"phrase: slop $s is not a whole number of 0 or more")
          s.asInt
        }.getOrElse(0)
        Phrase(columnOf(body, column, "phrase"), terms(body, "phrase"), slop)
      case "multi_match" =>
        keys(body, "multi_match", Set("match_queries"))
        val matches = Option(body.get("match_queries")).filter(_.isArray).getOrElse(bad("multi_match needs a match_queries list"))
          .elements().asScala.map(matchQuery(_, column)).toSeq
        if (matches.isEmpty) bad("multi_match has no match_queries")
        MultiMatch(matches)
      case "boolean" =>
        keys(body, "boolean", Set("must", "should", "must_not"))
        def clauses(name: String) = Option(body.get(name)).filterNot(_.isNull).map { list =>
          if (!list.isArray) bad(s"boolean: '$name' must be a list, got $list")
          list.elements().asScala.map(query(_, column)).toSeq
        }.getOrElse(Nil)
        val b = BooleanQuery(clauses("must"), clauses("should"), clauses("must_not"))
        if (b.must.isEmpty && b.should.isEmpty) bad("boolean needs a must or should clause")
        b
      case other => bad(s"type '$other' is not supported (match, phrase, multi_match, boolean)")
    }
  }

  private def matchQuery(body: JsonNode, column: Option[String]): Match = {
    keys(body, "match", Set("column", "terms", "operator", "boost", "fuzziness", "max_expansions", "prefix_length"))
    Option(body.get("fuzziness")) match {
      case Some(f) if f.isIntegralNumber && f.asInt == 0 =>
      case other => bad(s"match: fuzziness ${other.fold("absent (automatic, as Lance reads it)")(_.toString)} is not supported; give \"fuzziness\": 0")
    }
    val operator = Option(body.get("operator")).filterNot(_.isNull).map { o =>
      MatchOperator.find(o.asText).getOrElse(bad(s"match: operator $o is not one of ${MatchOperator.all.mkString(", ")}"))
    }.getOrElse(MatchOperator.Or)
    val boost = Option(body.get("boost")).filterNot(_.isNull).map { b =>
      if (!b.isNumber) bad(s"match: boost $b is not a number")
      b.floatValue
    }.getOrElse(1f)
    Match(columnOf(body, column, "match"), terms(body, "match"), operator, boost)
  }

  private def keys(body: JsonNode, kind: String, known: Set[String]): Unit =
    body.fieldNames().asScala.find(!known.contains(_)).foreach(k => bad(s"$kind: unknown key '$k' (${known.toSeq.sorted.mkString(", ")})"))

  private def terms(body: JsonNode, kind: String): String =
    Option(body.get("terms")).filter(_.isTextual).map(_.asText).getOrElse(bad(s"$kind needs its terms as a string"))

  private def columnOf(body: JsonNode, column: Option[String], kind: String): String =
    Option(body.get("column")).filterNot(_.isNull).map { c =>
      if (!c.isTextual) bad(s"$kind: column $c is not a string")
      c.asText
    }.orElse(column).getOrElse(bad(s"$kind names no column, and the search gives none"))

  /**
   * The `k` best rows of `query`, best first (ties by row id), each column searched by
   * `search(column)`; `allowed` a prefilter as for [[TextSearch.search]].
   */
  def search(query: FullTextQuery, search: String => TextSearch, k: Int, allowed: Option[Long => Boolean]): Seq[TextHit] =
    rows(query, search, allowed).toSeq.map { case (r, s) => TextHit(r, s) }.sortBy(h => (-h.score, h.rowId)).take(k)

  /** Every row `query` matches, with its score. */
  private def rows(query: FullTextQuery, search: String => TextSearch, allowed: Option[Long => Boolean]): Map[Long, Float] =
    query match {
      case Match(column, terms, operator, boost) =>
        search(column).search(terms, Int.MaxValue, operator, allowed).map(h => h.rowId -> h.score * boost).toMap
      case Phrase(column, terms, slop) => search(column).phrase(terms, Int.MaxValue, allowed, slop).map(h => h.rowId -> h.score).toMap
      case MultiMatch(matches) =>
        matches.map(rows(_, search, allowed)).foldLeft(Map.empty[Long, Float]) { (best, m) =>
          m.foldLeft(best) { case (acc, (r, s)) => acc.updated(r, acc.get(r).fold(s)(math.max(_, s))) }
        }
      case BooleanQuery(must, should, mustNot) =>
        val musts = must.map(rows(_, search, allowed))
        val shoulds = should.map(rows(_, search, allowed))
        val excluded = mustNot.flatMap(rows(_, search, allowed).keys).toSet
        val candidates = if (musts.nonEmpty) musts.map(_.keySet).reduce(_ intersect _) else shoulds.flatMap(_.keys).toSet
        (candidates -- excluded).iterator.map { r =>
          var score = 0f
          musts.foreach(m => score += m(r))
          shoulds.foreach(m => m.get(r).foreach(score += _))
          r -> score
        }.toMap
    }
}
