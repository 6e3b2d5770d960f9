package sparklance.spark

import java.util
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.NoSuchIndexException
import org.apache.spark.sql.catalyst.util.QuotingUtils
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.catalog.index.{SupportsIndex, TableIndex}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.expressions.filter.{AlwaysTrue, Predicate}
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, RowLevelOperationBuilder, RowLevelOperationInfo, WriteBuilder}
import org.apache.spark.sql.types.{DataType, IntegerType, LongType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.commit.{CommitRecord, Committer, Operation, ReadSet, RowCounts, Statement, TxnMarker}
import sparklance.format.table.{Dataset, PendingSchema, Snapshot}
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}
import sparklance.spark.indexing.{IndexRequest, TableIndexes}
import sparklance.spark.rowlevel.LanceRowLevelOperationBuilder
import sparklance.spark.scan.{KeyPredicates, LanceScanBuilder, StatementReads}
import sparklance.spark.maintenance.{AutoMaintenance, PostCommit}
import sparklance.spark.write.{LanceBatchWrite, LanceStreamingWrite, LanceWriteBuilder, OptimizedWrite, TxnOptions, WriteTarget}

/**
 * A Lance table at one version, as Spark sees it. Writes commit on top of the latest version.
 * With a `pending` schema change (automatic schema evolution), `snapshot` is its view and the
 * statement's write commits the change with its data. `timeTravel`: loaded as of a version or
 * time the statement named, not as the latest one.
 */
class LanceTable(val tableName: String, val dataset: Dataset, val snapshot: Snapshot,
    val settings: CatalogSettings = CatalogSettings(), val pending: Option[PendingSchema] = None,
    val timeTravel: Boolean = false)
    extends Table with SupportsRead with SupportsWrite with SupportsMetadataColumns
    with SupportsRowLevelOperations with SupportsDeleteV2 with SupportsSchemaEvolution with SupportsIndex {

  override def name(): String = tableName

  /**
   * The columns the UPDATE or MERGE using this instance assigns, recorded while Spark analyses it
   * (see [[rowlevel.AssignedColumnsRule]]); None without sparklance's session extension.
   */
  @volatile private[spark] var assignments: Option[rowlevel.RowLevelAssignments] = None
  /** Blob columns whose values the statement's plan no longer reads (see [[rowlevel.CarriedBlobsRule]]). */
  @volatile private[spark] var unreadBlobs: Set[String] = Set.empty

  private def committer(options: Map[String, String] = Map.empty): Committer =
    new Committer(dataset, settings.commitRetries, TableProperties.isolation(snapshot, options))

  lazy val sparkSchema: StructType = SparkTypes.toSpark(snapshot.schema, tableName)

  /** The identity columns, whose values sparklance's writers generate (see [[IdentityColumns]]). */
  private[spark] lazy val identityColumns: Seq[IdentityColumn] = IdentityColumns.of(snapshot.schema)

  /** The identity columns with the value each write's generated values go beyond (see [[IdentityColumns.highWaterMark]]). */
  private[spark] def identityMarks: Seq[(IdentityColumn, Option[Long])] =
    identityColumns.map(c => c -> LanceErrors.converting(IdentityColumns.highWaterMark(snapshot, dataset.storage, c)))

  override def columns(): Array[Column] = Columns.fromStruct(sparkSchema)

  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(
    TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE,
    TableCapability.OVERWRITE_DYNAMIC, TableCapability.AUTOMATIC_SCHEMA_EVOLUTION, TableCapability.MICRO_BATCH_READ,
    TableCapability.STREAMING_WRITE)

  /**
   * What `MERGE WITH SCHEMA EVOLUTION` and appends with `mergeSchema` may change on their own:
   * nullable columns added (also inside structs on file format 2.1+) and type widenings
   * ALTER COLUMN ... TYPE takes. Spark commits them through the catalog before the statement's data.
   */
  override def supportsColumnChange(change: TableChange.ColumnChange): Boolean = change match {
    case _: TableChange.AddColumn | _: TableChange.UpdateColumnType =>
      new TableAlteration(tableName, dataset, settings).accepts(snapshot, change)
    case _ => false
  }

  // With the properties that declare its vector and blob columns, so that SHOW CREATE TABLE replays them.
  override def properties(): util.Map[String, String] =
    (TableProperties.describe(snapshot) ++ ColumnProperties.describe(sparkSchema)).asJava

  /**
   * Its CHECK constraints, which Spark checks the rows of its writes against (see [[CheckConstraints]]),
   * and one per generated column holding it to its expression (see [[GeneratedColumns]]).
   */
  override def constraints(): Array[org.apache.spark.sql.connector.catalog.constraints.Constraint] =
    (CheckConstraints.of(snapshot.config) ++ GeneratedColumns.checks(sparkSchema)).toArray

  override def metadataColumns(): Array[MetadataColumn] = LanceTable.MetadataColumns

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    new LanceScanBuilder(this, options)

  override def newRowLevelOperationBuilder(info: RowLevelOperationInfo): RowLevelOperationBuilder =
    new LanceRowLevelOperationBuilder(this, info.command())

  /**
   * A DELETE is metadata-only when its condition provably covers whole fragments: TRUE, or
   * `_fragid = v` / `_fragid IN (...)`. Column predicates cannot be decided without statistics.
   */
  override def canDeleteWhere(predicates: Array[Predicate]): Boolean =
    predicates.forall(p => p.isInstanceOf[AlwaysTrue] || KeyPredicates.fragmentIds(p).isDefined)

  override def deleteWhere(predicates: Array[Predicate]): Unit = {
    require(canDeleteWhere(predicates), s"Metadata-only delete of ${predicates.mkString(" AND ")}")
    val current = snapshot
    val chosen = KeyPredicates.fragmentIds(predicates.toSeq)
    val removed = current.fragments.map(_.getId).filter(id => chosen.forall(_.contains(id)))
    // Rows added concurrently sit in fragments the statement cannot name: only a delete of
    // everything could have matched them.
    val matchable = if (chosen.isEmpty) ReadSet.Everything else ReadSet.Blind
    if (removed.nonEmpty) unlessApplied { marker =>
      val rows = RowCounts.deleted(current.fragments.filter(f => removed.contains(f.getId)).map(current.liveRows(dataset.storage, _)).sum)
      committer().commit(Some(current), Operation.Delete(Nil, removed, predicates.mkString(" AND ")), reads = Some(matchable),
        record = Some(CommitRecord(Statement.Delete, Some(rows))), appTxn = marker)
    }
  }

  /** Removes every fragment in one Delete commit; no data file is read or rewritten. */
  override def truncateTable(): Boolean = {
    val current = snapshot
    if (current.fragments.nonEmpty) unlessApplied { marker =>
      committer().commit(Some(current), Operation.Delete(Nil, current.fragments.map(_.getId), "true"), reads = Some(ReadSet.Everything),
        record = Some(CommitRecord(Statement.Truncate, Some(RowCounts.deleted(current.countRows(dataset.storage))))), appTxn = marker)
    }
    true
  }

  /**
   * A metadata-only commit, made idempotent by the session's `spark.sparklance.txnAppId` /
   * `txnVersion` (see [[TxnOptions]]): skipped when the table already holds that transaction.
   */
  private def unlessApplied(commit: Option[TxnMarker] => Unit): Unit = LanceErrors.converting {
    val marker = TxnOptions.ofSession
    try commit(marker)
    catch { case e: TxnAlreadyAppliedException => LanceTable.log.info(e.getMessage) }
  }

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = {
    // An idempotent write's txnAppId / txnVersion, checked before any task runs.
    val marker = LanceErrors.converting(TxnOptions.of(info.options().asScala.toMap))
    new LanceWriteBuilder(info, (inputSchema, mode) => {
      val target = WriteTarget.of(tableName, snapshot, settings)
      val marks = identityMarks
      new LanceBatchWrite(target, inputSchema, dataset.storage, pending.toSeq.flatMap(_.stagedFragments), (fragments, zones, reached) => {
        val overwrite = mode.replaces(hasRows = fragments.nonEmpty)
        // An append of no rows (or an insert-only MERGE that matched everything, or a dynamic
        // overwrite of no rows) changes nothing, so it commits nothing, like the row-level
        // statements, unless it changes the schema.
        if (!(overwrite || fragments.nonEmpty || pending.isDefined)) PostCommit.Nothing
        else {
          // An insert-only MERGE or INSERT ... SELECT from this table read it: under serializable
          // isolation rows committed meanwhile that its scans could have returned are a conflict.
          val scans = StatementReads.of(this)
          // Its query may have read an older version than the one it writes on (Spark 4.3 loads the
          // write target apart from the table the query reads; a DataFrame keeps the version it was
          // built on): rows committed since were never seen, so the commit is checked from there.
          val oldestRead = scans.toSeq.flatten.map(_.table.snapshot).filter(_.version < snapshot.version)
            .minByOption(_.version).getOrElse(snapshot)
          val (read, op) = pending match {
            case Some(p) if !overwrite => (p.base, Operation.Evolving(Operation.Append(fragments), p))
            case Some(_) => (snapshot, Operation.Overwrite(fragments, snapshot.schema))
            case None => (oldestRead, if (overwrite) Operation.Overwrite(fragments, snapshot.schema) else Operation.Append(fragments))
          }
          val indexing = WriteTarget.zoneMaps(target, zones, fragments)
          val inserted = fragments.map(_.getPhysicalRows).sum
          val record = if (overwrite) CommitRecord(Statement.InsertOverwrite, Some(RowCounts(inserted, 0, snapshot.countRows(dataset.storage))))
            else CommitRecord(Statement.Insert, Some(RowCounts.inserted(inserted)))
          val committed = committer(info.options().asScala.toMap).commit(Some(read), op, reads = Some(StatementReads.readSet(this, scans)),
            indexing = indexing, record = Some(record), appTxn = marker,
            claim = IdentityColumns.claim(snapshot, marks, reached))
          PostCommit(tableName, committed.version)(
            AutoMaintenance.afterCommit(dataset, tableName, settings, snapshot, committed, compact = !overwrite))
        }
      }, marks)
    }, OptimizedWrite.plan(info.schema(), snapshot.config, info.options().asScala.toMap, bytesPerRow),
      Some(mode => new LanceStreamingWrite(this, info, mode)), layout.Clustering.columns(snapshot.config))
  }

  // ---- CREATE INDEX and DROP INDEX ----

  private def indexes = new TableIndexes(tableName, dataset, settings)

  /**
   * `CREATE INDEX [IF NOT EXISTS] name ON t [USING kind] (column [OPTIONS (...)]) [OPTIONS (...)]`
   * builds what `CALL create_index` builds, with the same option names (the column's OPTIONS and
   * the index's are one set); Spark passes USING as the `type` property. An index of that name
   * already present is an IndexAlreadyExistsException, which IF NOT EXISTS turns into nothing.
   */
  override def createIndex(indexName: String, columns: Array[NamedReference],
      columnsProperties: util.Map[NamedReference, util.Map[String, String]], properties: util.Map[String, String]): Unit =
    LanceErrors.convertingArguments(LanceErrorCondition.InvalidOption) {
      val where = s"CREATE INDEX $indexName ON $tableName"
      val column = columns match {
        case Array(one) if one.fieldNames.length == 1 => one.fieldNames.head
        case _ => throw new IllegalArgumentException(
          s"$where: an index covers one top-level column, got (${columns.map(_.describe).mkString(", ")})")
      }
      val options = properties.asScala.toMap - SupportsIndex.PROP_TYPE
      val columnOptions = columnsProperties.asScala.values.flatMap(_.asScala).toMap
      columnOptions.find { case (k, v) => options.get(k).exists(_ != v) }.foreach { case (k, v) =>
        throw new IllegalArgumentException(s"$where: option $k is given twice, as '${options(k)}' and '$v'")
      }
      val request = IndexRequest.parse(where, column, Option(properties.get(SupportsIndex.PROP_TYPE)).filter(_.nonEmpty),
        Some(indexName), options ++ columnOptions)
      indexes.create(SparkSession.active, request, replace = false, where)
    }

  /** `DROP INDEX [IF EXISTS] name ON t`: as `CALL drop_index`; a missing index is a NoSuchIndexException. */
  override def dropIndex(indexName: String): Unit = LanceErrors.converting {
    if (indexes.drop(indexName).isEmpty) throw new NoSuchIndexException(indexName, tableName, None)
  }

  override def indexExists(indexName: String): Boolean = indexes.names(snapshot).contains(indexName)

  override def listIndexes(): Array[TableIndex] = indexes.list(snapshot).map { index =>
    val properties = new util.Properties()
    properties.setProperty("segments", index.segments.toString)
    new TableIndex(index.name, index.typeName, index.columns.map(c => Expressions.column(QuotingUtils.quoteIfNeeded(c))).toArray,
      util.Collections.emptyMap(), properties)
  }.toArray

  /**
   * What a row of this table takes on disk, from its fragments' file sizes and its blob columns'
   * sidecar files; None without rows.
   */
  private[spark] lazy val bytesPerRow: Option[Double] = {
    val rows = snapshot.fragments.map(_.getPhysicalRows).sum
    val bytes = snapshot.fragments.flatMap(_.getFilesList.asScala.map(_.getFileSizeBytes)).sum
    if (rows > 0 && bytes > 0) Some(bytes.toDouble / rows + blobBytesPerRow) else None
  }

  /** Bytes per row of the blob values kept in sidecar files (see BlobSidecarBytes). */
  private[spark] lazy val blobBytesPerRow: Double =
    sparklance.format.table.BlobSidecarBytes.perRow(dataset.storage, snapshot)
}

object LanceTable {
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)
  val RowAddress = "_rowaddr"
  val FragmentId = "_fragid"
  val RowId = "_rowid"
  val CreatedAtVersion = "_row_created_at_version"
  val LastUpdatedAtVersion = "_row_last_updated_at_version"

  private final case class Meta(name: String, dataType: DataType, description: String, json: String = null)
      extends MetadataColumn {
    override def isNullable: Boolean = false
    override def comment(): String = description
    override def metadataInJSON(): String = json
  }

  // Spark copies these into the metadata of an UPDATE / MERGE update, so the new copy of a row
  // keeps its identity.
  private val carriedOnUpdate =
    s"""{"${MetadataColumn.PRESERVE_ON_UPDATE}":true,"${MetadataColumn.PRESERVE_ON_REINSERT}":true,"${MetadataColumn.PRESERVE_ON_DELETE}":true}"""

  val MetadataColumns: Array[MetadataColumn] = Array(
    Meta(RowAddress, LongType, "Physical row address: fragment id << 32 | row offset in the fragment"),
    Meta(FragmentId, IntegerType, "Id of the fragment holding the row"),
    Meta(RowId, LongType, "Stable row id (tables with enable_stable_row_ids; otherwise the row address)", carriedOnUpdate),
    Meta(CreatedAtVersion, LongType, "Table version that inserted the row", carriedOnUpdate),
    Meta(LastUpdatedAtVersion, LongType, "Table version that last inserted or updated the row"))

  val MetadataNames: Set[String] = MetadataColumns.map(_.name).toSet
}
