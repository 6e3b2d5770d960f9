package sparklance.spark.scan

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.execution.{SQLExecution, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.columnar.{InMemoryRelation, InMemoryTableScanExec}
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, DataSourceV2ScanRelation}
import sparklance.format.commit.ReadSet
import sparklance.spark.LanceTable

/**
 * What the statement committing on this thread read of a table, for serializable isolation: the
 * scans of that table in the statement's own plan (its subqueries and the cached plans it reads
 * included), found when it commits. A table is the same table by where it lives, however Spark
 * loaded it: Spark 4.3 loads a write target apart from the same table read in the statement's
 * query. Scans of a version by time travel do not count: rows committed later cannot change
 * what they return. Nothing is recorded between statements, so a statement sees only its own
 * scans, whatever else runs on the session, and a DataFrame used for many actions is planned
 * (and scanned) anew by each.
 */
object StatementReads {
  /** The scans of `table`'s current rows in this thread's statement; None when no statement is running here. */
  def of(table: LanceTable): Option[Seq[TableRead]] =
    for {
      id <- Option(SparkSession.active.sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
      statement <- Option(SQLExecution.getQueryExecution(id.toLong))
    } yield scans(statement.optimizedPlan).collect {
      case r: ReadsTable if r.read.table.dataset.path == table.dataset.path && !r.read.table.timeTravel => r.read
    }.distinct

  /**
   * What a commit of `table` must check, from the statement's scans of it (`of`): blind when it
   * scanned none, everything when the statement cannot be found (the cautious answer is never wrong).
   */
  def readSet(table: LanceTable, reads: Option[Seq[TableRead]]): ReadSet = reads match {
    case None => ReadSet.Everything
    case Some(Seq()) => ReadSet.Blind
    case Some(scans) => new PredicateReadSet(table, scans.map(_.pushed).distinct)
  }

  private def scans(plan: LogicalPlan): Seq[Scan] = plan.collectWithSubqueries {
    case r: DataSourceV2ScanRelation => Seq(r.scan)
    case m: InMemoryRelation => scans(m.cacheBuilder.cachedPlan)
  }.flatten

  /** The scans of a cached plan, which was planned (maybe adaptively) when it was cached. */
  private def scans(plan: SparkPlan): Seq[Scan] = plan match {
    case b: BatchScanExec => Seq(b.scan)
    case a: AdaptiveSparkPlanExec => scans(a.inputPlan)
    case s: QueryStageExec => scans(s.plan)
    case m: InMemoryTableScanExec => scans(m.relation.cacheBuilder.cachedPlan)
    case other => (other.children ++ other.subqueries).flatMap(scans)
  }
}
