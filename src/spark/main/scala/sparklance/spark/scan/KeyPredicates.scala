package sparklance.spark.scan

import org.apache.spark.sql.connector.expressions.{Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import sparklance.spark.LanceTable

/**
 * Predicates that pin a key column to literals (`c = v`, `c IN (...)`): on `_fragid` they prune
 * whole fragments, on `_rowid` they name the rows to read.
 */
object KeyPredicates {
  /** The values a predicate allows for `column`, or None if it does not restrict it this way. */
  def allowed(p: Predicate, column: String): Option[Set[Long]] = {
    val children = p.children()
    val onColumn = children.headOption.exists {
      case r: NamedReference => r.fieldNames().sameElements(Array(column))
      case _ => false
    }
    if (!onColumn || !(p.name() == "IN" || p.name() == "=")) return None
    val values = children.tail.map {
      case l: Literal[_] => Option(l.value()).map(_.toString.toLong)
      case _ => return None
    }
    Some(values.flatten.toSet)
  }

  /** The intersection of what the usable predicates allow; None when none is usable. */
  def allowed(predicates: Seq[Predicate], column: String): Option[Set[Long]] =
    predicates.flatMap(allowed(_, column)).reduceOption(_ intersect _)

  def fragmentIds(p: Predicate): Option[Set[Long]] = allowed(p, LanceTable.FragmentId)
  def fragmentIds(predicates: Seq[Predicate]): Option[Set[Long]] = allowed(predicates, LanceTable.FragmentId)
  def rowIds(predicates: Seq[Predicate]): Option[Set[Long]] = allowed(predicates, LanceTable.RowId)
}
