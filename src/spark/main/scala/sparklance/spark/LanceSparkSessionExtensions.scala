package sparklance.spark

import org.apache.spark.sql.SparkSessionExtensions
import sparklance.spark.rowlevel.AssignedColumnsRule

/**
 * sparklance's session extension (`spark.sql.extensions=sparklance.spark.LanceSparkSessionExtensions`,
 * which `sparklance.configure` sets): tells the table which columns an UPDATE or MERGE assigns,
 * which Spark's row-level write API does not, so that the statement can rewrite only those
 * columns where most of a fragment's rows change (see [[rowlevel.RewriteMode]]).
 */
final class LanceSparkSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit =
    extensions.injectResolutionRule(_ => AssignedColumnsRule)
}
