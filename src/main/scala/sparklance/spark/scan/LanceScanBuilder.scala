package sparklance.spark.scan

import org.apache.spark.sql.connector.expressions.aggregate.{Aggregation, CountStar}
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.spark.LanceTable

/**
 * Column pruning and COUNT(*) pushdown; everything else is read as is. The scan of a row-level
 * operation also accepts Spark's runtime filter on fragment ids.
 */
final class LanceScanBuilder(table: LanceTable, options: CaseInsensitiveStringMap, rowLevel: Boolean = false)
    extends ScanBuilder with SupportsPushDownRequiredColumns with SupportsPushDownAggregates {

  private var required: StructType = table.sparkSchema
  private var countOnly = false

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema

  private def isCountStar(agg: Aggregation): Boolean =
    agg.groupByExpressions().isEmpty && agg.aggregateExpressions().nonEmpty &&
      agg.aggregateExpressions().forall(_.isInstanceOf[CountStar])

  override def supportCompletePushDown(aggregation: Aggregation): Boolean = isCountStar(aggregation)

  override def pushAggregation(aggregation: Aggregation): Boolean = {
    countOnly = isCountStar(aggregation)
    countOnly
  }

  override def build(): Scan =
    if (countOnly) new LanceCountScan(table.snapshot.countRows, table.tableName)
    else if (rowLevel) new LanceRowLevelScan(table, required, options)
    else new LanceScan(table, required, options)
}
