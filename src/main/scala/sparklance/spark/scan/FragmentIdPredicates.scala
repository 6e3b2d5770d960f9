package sparklance.spark.scan

import org.apache.spark.sql.connector.expressions.{Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import sparklance.spark.LanceTable

/** Predicates that name fragments (`_fragid = v`, `_fragid IN (...)`), which prune whole fragments. */
object FragmentIdPredicates {
  /** The fragment ids a predicate allows, or None if it does not restrict fragments this way. */
  def allowed(p: Predicate): Option[Set[Long]] = {
    val children = p.children()
    val onFragment = children.headOption.exists {
      case r: NamedReference => r.fieldNames().sameElements(Array(LanceTable.FragmentId))
      case _ => false
    }
    if (!onFragment || !(p.name() == "IN" || p.name() == "=")) return None
    val values = children.tail.map {
      case l: Literal[_] => Option(l.value()).map(_.toString.toLong)
      case _ => return None
    }
    Some(values.flatten.toSet)
  }

  /** The intersection of what the usable predicates allow; None when none is usable. */
  def allowed(predicates: Seq[Predicate]): Option[Set[Long]] =
    predicates.flatMap(allowed).reduceOption(_ intersect _)
}
