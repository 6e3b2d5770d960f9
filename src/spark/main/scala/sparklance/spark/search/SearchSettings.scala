package sparklance.spark.search

import org.apache.spark.sql.SparkSession
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}

/**
 * The session settings of sparklance's vector searches, `spark.sparklance.vector_search.<name>`:
 * whole numbers or true/false, read where a search is planned. A value that is not one is
 * LANCE_INVALID_OPTION naming the setting, not an exception out of the optimizer.
 */
object SearchSettings {
  val Prefix = "spark.sparklance.vector_search."

  // Spark's conf.getOption throws and catches an exception for an unset key, which every search
  // paid for each setting it reads (building the error loads its message templates).
  private def setting(session: SparkSession, name: String): Option[String] = Option(session.conf.get(Prefix + name, null))

  /** The setting `name` (without the prefix) as a whole number; None when unset. */
  def number(session: SparkSession, name: String): Option[Long] = setting(session, name).map { text =>
    text.trim.toLongOption.getOrElse(throw LanceErrors(LanceErrorCondition.InvalidOption, Map("message" ->
      s"Session setting $Prefix$name must be a whole number, got '$text'")))
  }

  /** The setting `name` (without the prefix) as true or false; None when unset. */
  def flag(session: SparkSession, name: String): Option[Boolean] = setting(session, name).map { text =>
    text.trim.toLowerCase(java.util.Locale.ROOT).toBooleanOption.getOrElse(throw LanceErrors(LanceErrorCondition.InvalidOption, Map("message" ->
      s"Session setting $Prefix$name must be true or false, got '$text'")))
  }

  /** An index search's option `name` (nprobes, refine_factor); None when unset or not positive (pylance's default). */
  def searchOption(session: SparkSession, name: String): Option[Int] =
    number(session, name).filter(n => n > 0 && n <= Int.MaxValue).map(_.toInt)
}
