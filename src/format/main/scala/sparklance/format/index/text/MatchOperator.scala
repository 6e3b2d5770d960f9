package sparklance.format.index.text

import java.util.Locale

/**
 * How the tokens of a match query combine, as Lance's `MatchQuery` operator: a row matches when
 * it holds any of the query's distinct tokens (OR, the default) or every one of them (AND). The
 * score of a matching row is the same BM25 sum either way (docs/format-inverted-index.md).
 */
sealed abstract class MatchOperator(val name: String) {
  override def toString: String = name
}

object MatchOperator {
  case object Or extends MatchOperator("OR")
  case object And extends MatchOperator("AND")

  val all: Seq[MatchOperator] = Seq(Or, And)

  /** The operator named `name` (case-insensitively), if any. */
  def find(name: String): Option[MatchOperator] = all.find(_.name == name.trim.toUpperCase(Locale.ROOT))
}
