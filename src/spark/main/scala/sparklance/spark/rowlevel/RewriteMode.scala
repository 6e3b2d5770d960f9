package sparklance.spark.rowlevel

import sparklance.spark.TableProperties

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

  /** The session setting that chooses it for the statements that follow (SQL has no DML options). */
  val SessionKey = "spark.sparklance.rewrite_mode"

  /**
   * The statement's option, else the session's setting, else the table's property
   * ([[TableProperties.RewriteModeProperty]]), else auto.
   */
  def of(options: Map[String, String], session: Option[String], config: Map[String, String]): RewriteMode = {
    val property = TableProperties.RewriteModeProperty
    options.get(property.name).map(property.parse("this statement's options", _))
      .orElse(session.map(property.parse(s"the session setting $SessionKey", _)))
      .getOrElse(property.of(config))
  }
}
