package sparklance.spark.changes

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{ChangelogContextUtils, RelationChanges, UnresolvedRelation}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.format.InvalidOptionException
import sparklance.spark.{CatalogNames, LanceCatalog}
import sparklance.spark.errors.LanceErrors
import sparklance.spark.streaming.LanceSourceOptions

/**
 * Delta's way to ask for change data, `spark.readStream.option("readChangeFeed", "true").table(t)`
 * (and `spark.read...` for a batch), on a table of a sparklance catalog: rewritten into the
 * change-data read Spark's own `readStream.changes(t)` makes, with the same options
 * (`startingVersion`, `startingTimestamp`, `endingVersion`, ...), so both are one read. Spark
 * resolves a table's name before the rules of session extensions run, and the columns of the
 * relation it makes are the table's, not its change data's: so this runs with the hint rules,
 * which Spark applies before it resolves names. As in Delta, updates come as pre and post images
 * unless the options say `computeUpdates` = false.
 */
final class ReadChangeFeedRule(spark: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = rewrite(plan)

  private def rewrite(plan: LogicalPlan): LogicalPlan = plan match {
    case changes: RelationChanges => changes // already Spark's change-data read
    case u: UnresolvedRelation if ReadChangeFeedRule.asked(u.options) && lance(u.multipartIdentifier) =>
      val options = u.options.asScala.toMap
      val kept = options.filter { case (k, _) => !k.equalsIgnoreCase(LanceSourceOptions.ReadChangeFeed) }
      val withUpdates = if (kept.keys.exists(_.equalsIgnoreCase(ReadChangeFeedRule.ComputeUpdates))) kept
        else kept + (ReadChangeFeedRule.ComputeUpdates -> "true")
      val context = ChangelogContextUtils.fromOptions(new CaseInsensitiveStringMap(withUpdates.asJava),
        spark.sessionState.conf.sessionLocalTimeZone)
      RelationChanges(u.copy(options = new CaseInsensitiveStringMap(kept.asJava)), context)
    case other => other.mapChildren(rewrite)
  }

  private def lance(parts: Seq[String]): Boolean =
    !spark.sessionState.catalog.isTempView(parts) && CatalogNames.resolve(spark, parts)._1.isInstanceOf[LanceCatalog]
}

object ReadChangeFeedRule {
  val ComputeUpdates = "computeUpdates"

  /** Whether `options` ask for change data; a value other than true or false is an error naming it. */
  def asked(options: CaseInsensitiveStringMap): Boolean = Option(options.get(LanceSourceOptions.ReadChangeFeed)).map(_.trim).exists { v =>
    v.toBooleanOption.getOrElse(throw LanceErrors.convert(new InvalidOptionException(LanceSourceOptions.ReadChangeFeed, s"'$v' is neither true nor false")))
  }
}
