package sparklance.spark

import java.util
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import scala.jdk.CollectionConverters._
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{BasePaths, Dataset, LanceSchema, Snapshot, StorageVersion, UncommittedFiles}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.maintenance.PostCommit
import sparklance.spark.write.{LanceBatchWrite, LanceWriteBuilder, OptimizedWrite, WriteTarget}

/**
 * CREATE TABLE [AS SELECT] and REPLACE TABLE [AS SELECT] as one atomic commit: the query's
 * fragments are written first and become the table's content in a single Overwrite, so a failed
 * query leaves no table (or the old table) behind.
 */
final class StagedLanceTable(tableName: String, dataset: Dataset, current: Option[Snapshot], schema: LanceSchema,
    stored: TableProperties.Stored, stableRowIds: Boolean, settings: CatalogSettings) extends StagedTable with SupportsWrite {
  private val config = stored.config

  private var staged: Seq[DataFragment] = Nil
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
        StorageVersion.forWriting(dataset.path, config(Committer.StorageVersionKey)), config, settings)
      new LanceBatchWrite(target, inputSchema, dataset.storage, Nil, fragments => { staged = fragments; PostCommit.Nothing })
    }, OptimizedWrite.plan(info.schema(), config, info.options().asScala.toMap, None))

  override def commitStagedChanges(): Unit = {
    uncommitted.commit(staged) {
      val indexing = ZoneMapMaintenance.forNewFragments(SparkSession.active, tableName, dataset.path,
        dataset.storage, settings.storageConf, schema, config, None, staged)
      new Committer(dataset, settings.commitRetries)
        .commit(current, Operation.Overwrite(staged, schema, config, Some(stableRowIds), stored.metadata), indexing = indexing)
    }
    staged = Nil
  }

  override def abortStagedChanges(): Unit = {
    uncommitted.discard(staged)
    staged = Nil
  }
}
