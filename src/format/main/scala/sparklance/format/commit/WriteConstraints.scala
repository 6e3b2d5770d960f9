package sparklance.format.commit

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TransactionProtos.Transaction

/**
 * The table config entries that hold the table's CHECK constraints (sparklance keeps one entry
 * per constraint, `sparklance.constraint.<name>`; their meaning belongs to the Spark layer).
 * What the commit layer needs of them: a write planned before a constraint was added has not
 * checked its rows against it, so it must not land after the commit that added it.
 */
object WriteConstraints {
  val Prefix = "sparklance.constraint."

  /** The constraint entries of a table config, by key. */
  def of(config: Map[String, String]): Map[String, String] = config.filter(_._1.startsWith(Prefix))

  /** The names of the constraints a committed transaction added or replaced (an UpdateConfig or an Overwrite setting their keys). */
  def added(t: Transaction): Seq[String] = {
    val set: Iterable[String] =
      if (t.hasOverwrite) t.getOverwrite.getConfigUpsertValuesMap.keySet().asScala
      else if (t.hasUpdateConfig) {
        val c = t.getUpdateConfig
        c.getConfigUpdates.getUpdateEntriesList.asScala.filter(_.hasValue).map(_.getKey) ++ c.getUpsertValuesMap.keySet().asScala
      } else Nil
    set.filter(_.startsWith(Prefix)).map(_.stripPrefix(Prefix)).toSeq.distinct.sorted
  }
}
