package sparklance.spark.rowlevel

import java.util.Locale

/**
 * How an UPDATE or MERGE writes the rows it updates: `rows` tombstones them and writes them whole
 * into new fragments (Lance's REWRITE_ROWS); `columns` leaves them where they are and writes, per
 * fragment, a file with the assigned columns for all its rows (REWRITE_COLUMNS, as pylance's
 * `update_columns`); `auto` chooses per fragment the one that writes fewer bytes.
 */
sealed abstract class RewriteMode(val name: String)

object RewriteMode {
  case object Auto extends RewriteMode("auto")
  case object Rows extends RewriteMode("rows")
  case object Columns extends RewriteMode("columns")

  val all: Seq[RewriteMode] = Seq(Auto, Rows, Columns)

  /** The table property. */
  val Property = "rewrite_mode"
  /** Where the table config keeps it. */
  val ConfigKey = "sparklance.rewrite_mode"
  /** The session setting that chooses it for the statements that follow (SQL has no DML options). */
  val SessionKey = "spark.sparklance.rewrite_mode"

  def parse(value: String): RewriteMode = all.find(_.name == value.trim.toLowerCase(Locale.ROOT)).getOrElse(
    throw new IllegalArgumentException(s"$Property must be one of ${all.map(_.name).mkString(", ")}, got '$value'"))

  /** The statement's option, else the session's setting, else the table's property, else auto. */
  def of(options: Map[String, String], session: Option[String], config: Map[String, String]): RewriteMode =
    options.get(Property).orElse(session).orElse(config.get(ConfigKey)).map(parse).getOrElse(Auto)
}
