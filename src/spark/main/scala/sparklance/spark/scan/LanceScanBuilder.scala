package sparklance.spark.scan

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.aggregate.{Aggregation, CountStar}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.skipping.ColumnFilter
import sparklance.spark.{LanceTable, UnsupportedColumnException}
import sparklance.spark.errors.LanceErrors
import sparklance.format.UnsupportedFeatureException
import sparklance.spark.changes.ReadChangeFeedRule
import sparklance.spark.streaming.LanceSourceOptions

/**
 * What a scan can skip: unrequested columns (nested ones too), fragments excluded by `_fragid`
 * predicates, rows other than those `_rowid` predicates name, rows the table's scalar indices
 * (zone maps, BTREE, BITMAP) rule out for the other predicates, fragments beyond a LIMIT, and for COUNT(*)
 * every file. The scan of a row-level operation also accepts Spark's runtime filters: on fragment ids,
 * and on the join key ([[sparklance.spark.rowlevel.TargetKeyPruning]], `keyPruned`).
 */
final class LanceScanBuilder(table: LanceTable, options: CaseInsensitiveStringMap, rowLevel: Boolean = false,
    conditionColumns: Option[Set[String]] = None, keyPruned: Boolean = false, nullFilled: Set[String] = Set.empty,
    prefilter: Option[Expression] = None)
    extends ScanBuilder with SupportsPushDownRequiredColumns with SupportsPushDownAggregates
    with SupportsPushDownV2Filters with SupportsPushDownLimit {

  private var required: StructType = table.sparkSchema
  private var countOnly = false
  private var keyPredicates: Array[Predicate] = Array.empty
  private var pushed: Seq[Predicate] = Nil
  private var limit: Option[Int] = None
  private var dataFilter: Option[ColumnFilter] = None
  private var skipping: Array[Predicate] = Array.empty

  /**
   * `_fragid` predicates prune fragments, `_rowid` predicates select rows through the row id
   * index, and predicates on data columns skip the rows the table's scalar indices rule out
   * ([[DataFilters]]); all predicates are still evaluated by Spark.
   */
  override def pushPredicates(predicates: Array[Predicate]): Array[Predicate] = {
    pushed = predicates.toSeq
    keyPredicates = predicates.filter(p => KeyPredicates.fragmentIds(p).isDefined ||
      KeyPredicates.allowed(p, LanceTable.RowId).isDefined)
    val filters = predicates.map(p => p -> DataFilters.of(p, table.snapshot.schema))
    skipping = filters.collect { case (p, Some(_)) => p }
    dataFilter = filters.flatMap(_._2).reduceOption(ColumnFilter.And(_, _))
    // A predicate holding a hint is implied by another that Spark evaluates: nothing to evaluate of it.
    predicates.filterNot(ArrayContainsHint.within)
  }

  override def pushedPredicates(): Array[Predicate] = (keyPredicates ++ skipping).distinct

  override def pushLimit(n: Int): Boolean = { limit = Some(n); true }

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema

  private def isCountStar(agg: Aggregation): Boolean =
    agg.groupByExpressions().isEmpty && agg.aggregateExpressions().nonEmpty &&
      agg.aggregateExpressions().forall(_.isInstanceOf[CountStar])

  override def supportCompletePushDown(aggregation: Aggregation): Boolean = isCountStar(aggregation)

  override def pushAggregation(aggregation: Aggregation): Boolean = {
    countOnly = isCountStar(aggregation)
    countOnly
  }

  override def build(): Scan = LanceErrors.converting {
    // Change data has other columns than the table: only the extension's rule, which sees table
    // names (not format("lance").load(path)), can ask Spark for them.
    if (ReadChangeFeedRule.asked(options)) throw new UnsupportedFeatureException(s"Option " +
      s"${LanceSourceOptions.ReadChangeFeed} on ${table.tableName} reads change data only by a table name " +
      "(.table(\"lance.db.t\"), or lance.`<path>` for a table by location) in a session with sparklance's session " +
      s"extension (spark.sql.extensions=${classOf[sparklance.spark.LanceSparkSessionExtensions].getName}). Otherwise " +
      "read change data with spark.readStream.changes(...), STREAM ... CHANGES FROM VERSION ..., or " +
      "spark.read.changes(...) and SELECT ... CHANGES FROM VERSION ...")
    UnsupportedColumnException.refuseReads(table.tableName, table.sparkSchema, required, nullFilled)
    if (countOnly) new LanceCountScan(table.snapshot.countRows(table.dataset.storage), table)
    else if (rowLevel) {
      val dataColumns = required.fieldNames.filterNot(LanceTable.MetadataNames.contains).toSet
      // The group filter's subquery reads the key column of every fragment; a runtime filter on an
      // indexed key finds the fragments, and the zones within them, without reading any.
      // A prefilter pays where the statement reads other columns than its condition's; it finds
      // the rows, and with them the fragments, the group filter would, in the scan's own tasks.
      val usedPrefilter = prefilter.filter(c => Prefilter.pays(c.references.map(_.name).toSet, dataColumns))
      val groupFilter = !keyPruned && usedPrefilter.isEmpty && !conditionColumns.exists(dataColumns.subsetOf)
      new LanceRowLevelScan(table, required, options, groupFilter, dataFilter, pushed, nullFilled, usedPrefilter)
    }
    else new LanceScan(table, required, options, KeyPredicates.fragmentIds(keyPredicates.toSeq), limit,
      KeyPredicates.rowIds(keyPredicates.toSeq), dataFilter, pushed)
  }
}
