package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write._
import scala.jdk.CollectionConverters._
import sparklance.spark.LanceTable
import sparklance.spark.write.OptimizedWrite

/**
 * The write side of a row-level operation. Rows of an UPDATE or MERGE are clustered by fragment so
 * each task sees a fragment's deletions together and a statement's new rows land in few
 * fragments (but see [[OuterMergeRule]]), and sorted by address only when updated rows may
 * stay in place. The clustering is not strict, so adaptive
 * execution may split large groups (such as the inserted rows, whose fragment is null), unless
 * updated rows may stay in place ([[InPlaceUpdates]]): a fragment's column file needs all its
 * updated rows in one task.
 */
final class LanceDeltaWrite(table: LanceTable, command: RowLevelOperation.Command, info: LogicalWriteInfo,
    outerJoined: Boolean)
    extends DeltaWrite with RequiresDistributionAndOrdering {

  @volatile private var driverMetrics = DmlMetrics.driver(0, 0)

  private val inPlace = InPlaceUpdates.plan(table, command, info.schema(), info.options().asScala.toMap)
  // Rows whose blob values the plan dropped (CarriedBlobsRule) must stay in place: written whole, they would lose them.
  if (table.unreadBlobs.nonEmpty && inPlace.forall(_.mode != RewriteMode.Columns))
    throw new IllegalStateException(s"${table.tableName}: the statement does not read blob columns " +
      s"${table.unreadBlobs.mkString(", ")}, so it must update its rows in place, but it was planned to rewrite them whole")

  override def description(): String = s"lance ${command.toString.toLowerCase} ${table.tableName}"

  // A DELETE writes no rows, only each task's bitmaps, which the driver merges per fragment; the
  // rows of an outer-joined MERGE come already shuffled and coalesced (see [[OuterMergeRule]]).
  // Neither needs to move its rows again, unless updated rows stay in place.
  private val clustered = inPlace.isDefined || !(command == RowLevelOperation.Command.DELETE || outerJoined)

  override def requiredDistribution(): Distribution =
    if (clustered) Distributions.clustered(Array[Expression](Expressions.column(LanceTable.FragmentId)))
    else Distributions.unspecified()

  override def distributionStrictlyRequired(): Boolean = inPlace.isDefined

  // About one fragment's bytes per task (see OptimizedWrite), so a statement's new rows land in few fragments.
  override def advisoryPartitionSizeInBytes(): Long =
    if (!clustered) 0L else OptimizedWrite.plan(info.schema(), table.snapshot.config, info.options().asScala.toMap, table.bytesPerRow)
      .fold(0L)(_.advisoryPartitionBytes)

  // Only rewriting a fragment's columns in place needs its rows in address order; deletion bitmaps
  // and new fragments take rows in any order, so other statements skip the sort.
  override def requiredOrdering(): Array[SortOrder] =
    if (inPlace.isEmpty) Array.empty
    else Array(Expressions.sort(Expressions.column(LanceTable.RowAddress), SortDirection.ASCENDING))

  override def supportedCustomMetrics(): Array[CustomMetric] = DmlMetrics.supported

  override def reportDriverMetrics(): Array[CustomTaskMetric] = driverMetrics

  override def toBatch: DeltaBatchWrite =
    new LanceDeltaBatchWrite(table, command, info, inPlace,
      (deletionFiles, dataFiles) => driverMetrics = DmlMetrics.driver(deletionFiles, dataFiles))
}
