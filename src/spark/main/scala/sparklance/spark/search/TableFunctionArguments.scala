package sparklance.spark.search

import java.util.Locale
import org.apache.spark.sql.catalyst.expressions.{Expression, NamedArgumentExpression}

/**
 * The argument list of one of sparklance's search table functions (`vector_search`,
 * `text_search`): `names` in positional order, of which `required` must be given. Arguments come
 * by name (`k => 10`) or by position, every one a constant: a search is planned once, when the
 * statement is analyzed. A bad argument is an IllegalArgumentException naming the function and the
 * argument, which the function's caller turns into LANCE_INVALID_ARGUMENT.
 */
final case class TableFunctionArguments(function: String, names: Seq[String], required: Seq[String]) {
  /**
   * The constant value of each argument given, by name; `value` turns an argument's evaluated
   * constant into the value the function takes (its default: the constant as it is).
   */
  def parse(args: Seq[Expression], value: (String, Expression, Any) => Any = (_, _, v) => v): Map[String, Any] = {
    val (named, positional) = args.partition(_.isInstanceOf[NamedArgumentExpression])
    if (positional.size > names.size) bad(s"takes at most ${names.size} arguments (${names.mkString(", ")}), got ${positional.size}")
    val byName = positional.zip(names).map { case (e, n) => n -> e }.toMap ++ named.map { case NamedArgumentExpression(key, e) =>
      val name = key.toLowerCase(Locale.ROOT)
      if (!names.contains(name)) unknown(key)
      if (positional.size > names.indexOf(name)) twice(name)
      name -> e
    }
    byName.map { case (name, e) =>
      if (!e.foldable) bad(s"argument '$name' must be a constant, got ${e.sql}")
      name -> value(name, e, e.eval())
    }
  }

  /** Checks that `values` names only arguments of the function and every required one. */
  def check(values: Map[String, Any]): Unit = {
    values.keys.find(!names.contains(_)).foreach(unknown)
    val missing = required.filterNot(values.contains)
    if (missing.nonEmpty) bad(s"needs the arguments ${missing.sorted.mkString(", ")}")
  }

  /** The value of argument `name`; None when absent or NULL (the default applies). */
  def value(values: Map[String, Any], name: String): Option[Any] = values.get(name).filter(_ != null)

  /** Argument `name` as text. */
  def text(values: Map[String, Any], name: String): Option[String] = value(values, name).map(_.toString)

  /** Argument `name`, a positive whole number that fits an Int. */
  def positive(values: Map[String, Any], name: String): Option[Int] = value(values, name).map {
    case n: java.lang.Number if n.longValue() > 0 && n.longValue() <= Int.MaxValue && n.doubleValue() == n.longValue() => n.intValue()
    case other => bad(s"argument '$name' must be a positive integer, got $other")
  }

  /** Argument `name`, a boolean (`true`, `false`, or the strings 'true' and 'false'). */
  def flag(values: Map[String, Any], name: String): Option[Boolean] = value(values, name).map {
    case b: java.lang.Boolean => b.booleanValue()
    case s if Set("true", "false").contains(s.toString.trim.toLowerCase(Locale.ROOT)) => s.toString.trim.equalsIgnoreCase("true")
    case other => bad(s"argument '$name' must be true or false, got $other")
  }

  def unknown(name: String): Nothing = bad(s"has no argument '$name'; its arguments are ${names.mkString(", ")}")
  def twice(name: String): Nothing = bad(s"argument '$name' is given twice")
  def bad(detail: String): Nothing = throw new IllegalArgumentException(s"$function $detail")
}
