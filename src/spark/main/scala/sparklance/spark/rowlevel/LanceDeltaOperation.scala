package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{DeltaWriteBuilder, LogicalWriteInfo, RowLevelOperation, SupportsDelta}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.index.Indices
import sparklance.format.skipping.DataSkipping
import sparklance.spark.{LanceTable, SparkTypes}
import sparklance.spark.scan.LanceScanBuilder

/**
 * DELETE / UPDATE / MERGE as a merge-on-read delta: Spark scans the rows with their address
 * (`_rowaddr`, the row id) and fragment (`_fragid`), and the write tombstones the old addresses
 * and appends the new rows. Scan and write share the table's snapshot, which is the version the
 * commit builds on.
 */
final class LanceDeltaOperation(table: LanceTable, command: RowLevelOperation.Command) extends SupportsDelta {
  override def command(): RowLevelOperation.Command = command
  override def description(): String = s"lance ${command.toString.toLowerCase} on ${table.tableName}"

  /**
   * The target columns the statement's conditions read, when [[ConditionColumnsRule]] has seen the
   * plan (it runs before Spark builds the scan). Unknown means the scan keeps Spark's runtime
   * group filter.
   */
  @volatile private[spark] var conditionColumns: Option[Set[String]] = None

  /**
   * Whether [[TargetKeyPruning]] has the target scan filtered at run time by the source's keys
   * on an indexed column, which then takes the place of Spark's runtime group filter.
   */
  @volatile private[spark] var keyPruned: Boolean = false

  /**
   * The target columns the statement computes with (conditions, assigned values), beyond passing
   * a row's values on unchanged, when [[ConditionColumnsRule]] has seen the plan.
   */
  @volatile private[spark] var valueColumns: Option[Set[String]] = None

  /**
   * Columns of unmappable Lance types (see [[sparklance.spark.SparkTypes.UnsupportedTypeKey]]) an
   * UPDATE or MERGE provably neither reads nor assigns: its scan hands them over as NULLs, and its
   * updates stay in place ([[InPlaceUpdates]]), so their data is never read or rewritten. Unknown
   * (no session extension): none, and a scan that needs them is refused.
   */
  private[spark] def nullFilled: Set[String] = {
    val unsupported = SparkTypes.unsupportedColumns(table.snapshot.schema, table.tableName).keySet
    val updates = command == RowLevelOperation.Command.UPDATE || command == RowLevelOperation.Command.MERGE
    (table.assignments, conditionColumns, valueColumns) match {
      case (Some(assigned), Some(conditions), Some(values)) if updates && unsupported.nonEmpty =>
        unsupported -- assigned.changed -- conditions -- values
      case _ => Set.empty
    }
  }

  /**
   * The part of the condition on the target's read that its scan can evaluate on a few columns
   * before reading the others ([[sparklance.spark.scan.Prefilter]]), when [[ConditionColumnsRule]]
   * has seen the plan.
   */
  @volatile private[spark] var prefilter: Option[Expression] = None

  /** Whether a MERGE's rows come from an outer join that shuffles them ([[OuterMergeRule]]). */
  @volatile private[spark] var outerJoined: Boolean = false

  /** The top-level columns the target's scan can skip rows by, through an index on them ([[TargetKeyPruning]]). */
  private[spark] def indexedColumns: Set[String] = {
    val snapshot = table.snapshot
    val indices = Indices.parse(snapshot.file.indexSection, s"${table.tableName} version ${snapshot.version}")
    val fields = DataSkipping.indexedFields(indices, snapshot.stableRowIds)
    snapshot.schema.fields.filter(f => fields.contains(f.id)).map(_.name).toSet
  }

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    new LanceScanBuilder(table, options, rowLevel = true, conditionColumns = conditionColumns, keyPruned = keyPruned,
      nullFilled = nullFilled, prefilter = prefilter)

  override def rowId(): Array[NamedReference] = Array(Expressions.column(LanceTable.RowAddress))

  /** With stable row ids, an updated row's id and created-at version travel to its new copy. */
  override def requiredMetadataAttributes(): Array[NamedReference] =
    (Seq(LanceTable.FragmentId) ++ (if (table.snapshot.stableRowIds) Seq(LanceTable.RowId, LanceTable.CreatedAtVersion) else Nil))
      .map(Expressions.column).toArray

  override def newWriteBuilder(info: LogicalWriteInfo): DeltaWriteBuilder = new LanceDeltaWriteBuilder(table, command, info, outerJoined)
}
