package sparklance.spark

import java.util
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import scala.jdk.CollectionConverters._
import sparklance.format.commit.{CommitRecord, Committer, NewFragmentIndices, Operation, RowCounts, Statement}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{BasePaths, Dataset, LanceSchema, Snapshot, StorageVersion, UncommittedFiles}
import sparklance.spark.maintenance.PostCommit
import sparklance.spark.write.{LanceBatchWrite, LanceWriteBuilder, OptimizedWrite, WriteTarget}
import sparklance.spark.errors.LanceErrors

/**
 * CREATE TABLE [AS SELECT] and REPLACE TABLE [AS SELECT] as one atomic commit: the query's
 * fragments are written first and become the table's content in a single Overwrite, so a failed
 * query leaves no table (or the old table) behind.
 */
final class StagedLanceTable(tableName: String, dataset: Dataset, current: Option[Snapshot], schema: LanceSchema,
    stored: TableProperties.Stored, stableRowIds: Boolean, settings: CatalogSettings) extends StagedTable with SupportsWrite {
  private val config = stored.config

  private var staged: Seq[DataFragment] = Nil
  // Whether a query wrote the content (AS SELECT, writeTo): it is a CTAS, not a plain CREATE TABLE.
  private var written = false
  // The zone map segments of the staged fragments, from the zones their tasks gathered.
  private var stagedZones: Option[NewFragmentIndices] = None
  // The high-water marks of the identity columns, from the values the query wrote into them.
  private var stagedMarks: Map[String, String] = Map.empty
  // The rows of AS SELECT keep the values they bring (a copy of a table with an identity column
  // keeps its ids, as BY DEFAULT would), NULLs are generated; the marks start above them.
  private val identity = IdentityColumns.of(schema).map(c => c.copy(always = false) -> Option.empty[Long])
  private val uncommitted = new UncommittedFiles(dataset.storage, dataset.path)

  override def name(): String = tableName
  override def columns(): Array[Column] =
    Columns.fromStruct(SparkTypes.toSpark(schema, tableName))
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE)
  override def properties(): util.Map[String, String] = (config ++ stored.metadata).asJava

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    new LanceWriteBuilder(info, (inputSchema, _) => {
      val target = WriteTarget(tableName, BasePaths.own(dataset.path), schema,
        StorageVersion.forWriting(dataset.path, config(Committer.StorageVersionKey)), config, settings, None)
      new LanceBatchWrite(target, inputSchema, dataset.storage, Nil, (fragments, zones, reached) => {
        staged = fragments
        written = true
        stagedZones = WriteTarget.zoneMaps(target, zones, fragments)
        stagedMarks = identity.flatMap { case (c, _) => reached.get(c.name).map(IdentityColumns.highWaterMarkKey(c.fieldId) -> _.toString) }.toMap
        PostCommit.Nothing
      }, identity)
    }, optimizedWrite(info.schema(), info.options().asScala.toMap), clustering = layout.Clustering.columns(config))

  /** The optimized write of `input` rows into the new table (which has no rows to tell their size). */
  private[spark] def optimizedWrite(input: org.apache.spark.sql.types.StructType, options: Map[String, String]): Option[OptimizedWrite] =
    OptimizedWrite.plan(input, config, options, None)

  override def commitStagedChanges(): Unit = LanceErrors.converting {
    uncommitted.commit(staged) {
      new Committer(dataset, settings.commitRetries)
        .commit(current, Operation.Overwrite(staged, schema, config, Some(stableRowIds), stored.metadata ++ stagedMarks), indexing = stagedZones,
          record = Some(CommitRecord(if (current.isDefined) Statement.ReplaceTable else if (written) Statement.Ctas else Statement.CreateTable,
            Some(RowCounts(staged.map(_.getPhysicalRows).sum, 0, current.fold(0L)(_.countRows(dataset.storage)))))))
    }
    staged = Nil
    written = false
    stagedZones = None
    stagedMarks = Map.empty
  }

  override def abortStagedChanges(): Unit = {
    uncommitted.discard(staged)
    staged = Nil
    stagedZones = None
  }
}
