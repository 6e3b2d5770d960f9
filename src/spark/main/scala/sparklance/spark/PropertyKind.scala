package sparklance.spark

import java.util.Locale

/**
 * The kind of value a table property takes (see [[TableProperty]]): how a given string is read,
 * refusing what is not a value of the kind, and how the value is stored and shown again.
 */
sealed abstract class PropertyKind[T] {
  /** The values the kind takes, as errors and the docs say it: "true or false". */
  def values: String
  /** The value `raw` stands for, or None when it is not one. */
  def read(raw: String): Option[T]
  /** The value as the table config keeps it and SHOW TBLPROPERTIES shows it. */
  def render(value: T): String
}

object PropertyKind {
  case object Bool extends PropertyKind[Boolean] {
    val values = "true or false"
    def read(raw: String): Option[Boolean] = raw.trim.toLowerCase(Locale.ROOT).toBooleanOption
    def render(value: Boolean): String = value.toString
  }

  /** A whole number from `min` to `max`, as a count of rows or fragments. */
  final case class Count(min: Long, max: Long) extends PropertyKind[Long] {
    def values: String = s"an integer from $min to $max"
    def read(raw: String): Option[Long] = raw.trim.toLongOption.filter(n => n >= min && n <= max)
    def render(value: Long): String = value.toString
  }

  /** One of `choices`, by `name` (any case) or by one of the `aliases`. */
  final case class Choice[T](choices: Seq[T], name: T => String, aliases: Map[String, T] = Map.empty[String, T])
      extends PropertyKind[T] {
    def values: String = "one of " + (choices.map(name) ++ aliases.keys).mkString(", ")
    def read(raw: String): Option[T] = {
      val given = raw.trim.toLowerCase(Locale.ROOT)
      choices.find(c => name(c).toLowerCase(Locale.ROOT) == given).orElse(aliases.get(given))
    }
    def render(value: T): String = name(value)
  }

  /**
   * A list of top-level columns, as `values` describes it; `normalize` checks the list's form and
   * returns it as stored, or throws IllegalArgumentException. Whether the table has the columns is
   * checked against its schema apart (CREATE and ALTER know the schema).
   */
  final case class Columns(values: String, normalize: String => String) extends PropertyKind[String] {
    def read(raw: String): Option[String] =
      try Some(normalize(raw)) catch { case _: IllegalArgumentException => None }
    def render(value: String): String = value
  }
}
