package sparklance.spark

import java.util
import org.apache.spark.sql.catalyst.analysis._
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import org.apache.spark.sql.SparkSession
import sparklance.format.{DroppedTableKeptException, InvalidOptionException, UnsupportedFeatureException}
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}
import sparklance.format.io.Storage
import sparklance.format.table.{Branches, Dataset, PendingSchema, Snapshot, Tags}
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure
import sparklance.spark.changes.{ChangelogRanges, LanceChangelog}
import sparklance.spark.layout.Clustering
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.procedures.LanceProcedures

/**
 * A Spark catalog over a warehouse directory: namespaces are directories and a table `ns.t` is
 * the Lance dataset `<warehouse>/ns/t.lance`, which pylance opens as it is. Any table can also be
 * named by its location, ``<catalog>.`/path/t.lance` `` (see [[TablePath]]).
 *
 * Options: `warehouse`, a directory (local path or URI); without one, the catalog opens tables by
 * location only.
 */
class LanceCatalog extends StagingTableCatalog with SupportsNamespaces with ProcedureCatalog {
  private var catalogName: String = _
  private var warehouseOption: Option[String] = None
  private var settings: CatalogSettings = _
  private var warehouseStorage: Option[Storage] = None

  override def initialize(name: String, options: CaseInsensitiveStringMap): Unit = LanceErrors.converting {
    catalogName = name
    warehouseOption = Option(options.get("warehouse")).filter(_.nonEmpty).map(TablePath.fromOption)
    val sparkConf = SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)
      .map(_.sparkContext.getConf.getAll.toMap).getOrElse(Map.empty[String, String])
    // Hadoop keys are case-sensitive (sparklance.storage.<scheme>.putIfAbsent): keep them as written.
    settings = CatalogSettings(options.asCaseSensitiveMap().asScala.toMap, sparkConf)
    warehouseStorage = warehouseOption.map { wh =>
      val s = settings.storage(wh)
      s.mkdirs(wh)
      s
    }
  }

  private def warehouse: String = warehouseOption.getOrElse(throw noWarehouse)
  private[spark] def storage: Storage = warehouseStorage.getOrElse(throw noWarehouse)
  private def noWarehouse = new InvalidOptionException(s"spark.sql.catalog.$catalogName.warehouse",
    s"catalog '$catalogName' has no warehouse, so it has no namespaces: it opens tables by location " +
      s"($catalogName.`/path/t.lance`). Set spark.sql.catalog.$catalogName.warehouse to a directory for named tables")

  override def name(): String = catalogName

  /**
   * Column DEFAULT values: Spark analyses them in CREATE / ALTER TABLE and fills them in for
   * INSERT, UPDATE SET c = DEFAULT and MERGE; the catalog keeps them (see [[ColumnDefaults]]).
   * CHECK constraints: Spark checks the rows of its writes against those a table reports; the
   * catalog keeps them and checks the existing rows when one is added (see [[CheckConstraints]]).
   * Generated columns: Spark analyses their expressions at CREATE TABLE; see [[GeneratedColumns]].
   * Identity columns: the catalog keeps their declaration, sparklance's writers generate their
   * values (see [[IdentityColumns]]).
   */
  override def capabilities(): util.Set[TableCatalogCapability] =
    util.EnumSet.of(TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE, TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT,
      TableCatalogCapability.SUPPORTS_CREATE_TABLE_WITH_GENERATED_COLUMNS,
      // Identity columns: sparklance's writers generate their values (see IdentityColumns).
      TableCatalogCapability.SUPPORTS_CREATE_TABLE_WITH_IDENTITY_COLUMNS)

  /**
   * Whether CREATE / REPLACE TABLE ... AS SELECT and `writeTo().create()` make every column
   * nullable, as Spark does by default; with the catalog option `use_nullable_query_schema` =
   * false (Iceberg's `use-nullable-query-schema`) the query's NOT NULL columns stay NOT NULL.
   */
  override def useNullableQuerySchema(): Boolean = settings.useNullableQuerySchema

  // ---- identifiers and paths ----

  private def checkPart(part: String, what: String): String = {
    if (part.isEmpty || part == "." || part == ".." || part.exists(c => c == '/' || c == '\\' || c == '\u0000') ||
        part.startsWith("."))
      throw new InvalidNameException(part,
        s"Invalid $what name '$part' in catalog $catalogName: names may not be empty, start with '.', or contain '/' or '\\'")
    part
  }

  private def namespacePath(namespace: Array[String]): String =
    namespace.map(checkPart(_, "namespace")).foldLeft(warehouse)(Storage.join)

  private[spark] def tablePath(ident: Identifier): String =
    Storage.join(namespacePath(ident.namespace()), checkPart(ident.name(), "table") + ".lance")

  private def quoted(ident: Identifier): String = TablePath.of(ident) match {
    case Some(location) => s"$catalogName.${TablePath.quoted(location)}"
    case None => (catalogName +: ident.namespace() :+ ident.name()).mkString(".")
  }

  private def dataset(ident: Identifier) = TablePath.of(ident) match {
    case Some(location) => new Dataset(settings.storage(location), location)
    case None => new Dataset(storage, tablePath(ident))
  }

  /** The table `ident` is a part of (a branch or metadata table of it), if any: `ns.t` for `ns.t.x`, or a location. */
  private def ownerOf(ident: Identifier): Option[Identifier] =
    if (ident.namespace().isEmpty) None
    else Some(Identifier.of(ident.namespace().init, ident.namespace().last))
      .filter(owner => owner.namespace().nonEmpty || TablePath.of(owner).isDefined)
  private[spark] def datasetOf(ident: Identifier): Dataset = resolve(ident)

  /**
   * The table `ident` names for reads and writes: `ns.t`, or `ns.t.branch_<name>`, branch <name>
   * of `ns.t` (as Iceberg names branches; a table of that name, if there is one, comes first), with
   * its own version line (see [[Branches]]). Quote a nested name: `ns.t.`branch_feature/x``.
   */
  private def resolve(ident: Identifier): Dataset = branchOf(ident).getOrElse {
    // Under a location there are only branches and metadata tables (`lance.`/p/t.lance`.history`).
    if (ident.namespace().headOption.exists(TablePath.absolute(_).isDefined)) throw new NoSuchTableException(ident)
    dataset(ident)
  }

  private def branchOf(ident: Identifier): Option[Dataset] =
    if (ownerOf(ident).isEmpty || !ident.name().startsWith(LanceCatalog.BranchPrefix)) None
    else {
      val name = ident.name().stripPrefix(LanceCatalog.BranchPrefix)
      lazy val root = dataset(ownerOf(ident).get)
      if (!name.contains('/') && dataset(ident).exists) None
      else if (root.exists && new Branches(root).get(name).isDefined) Some(new Branches(root).dataset(name))
      else None
    }
  /** The settings tasks of this catalog's jobs carry (storage configuration, commit retries). */
  private[spark] def settingsForTasks: CatalogSettings = settings

  // ---- procedures (CALL <catalog>.system.<name>(...)) ----

  override def loadProcedure(ident: Identifier): UnboundProcedure =
    LanceProcedures.load(this, ident.namespace().toSeq, ident.name())

  override def listProcedures(namespace: Array[String]): Array[Identifier] =
    if (namespace.toSeq.map(_.toLowerCase) != Seq(LanceProcedures.Namespace)) Array.empty
    else LanceProcedures.names.map(n => Identifier.of(Array(LanceProcedures.Namespace), n)).toArray

  // ---- namespaces ----

  override def listNamespaces(): Array[Array[String]] = listNamespaces(Array.empty[String])

  override def listNamespaces(namespace: Array[String]): Array[Array[String]] = LanceErrors.converting {
    if (namespace.nonEmpty && !namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace)
    storage.listDirectories(namespacePath(namespace))
      .filterNot(d => d.endsWith(".lance") || d.startsWith("."))
      .sorted.map(d => namespace :+ d).toArray
  }

  override def namespaceExists(namespace: Array[String]): Boolean = LanceErrors.converting {
    namespace.nonEmpty && warehouseOption.isDefined && storage.exists(namespacePath(namespace)) &&
      !namespace.last.endsWith(".lance")
  }

  override def loadNamespaceMetadata(namespace: Array[String]): util.Map[String, String] = LanceErrors.converting {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace)
    Map("location" -> namespacePath(namespace)).asJava
  }

  override def createNamespace(namespace: Array[String], metadata: util.Map[String, String]): Unit = LanceErrors.converting {
    if (namespace.isEmpty) throw new InvalidNameException("", "Cannot create the empty namespace")
    if (namespaceExists(namespace)) throw new NamespaceAlreadyExistsException(namespace)
    val unsupported = metadata.asScala.keySet.toSet -- Set("owner", "comment", "location")
    if (unsupported.nonEmpty)
      throw new UnsupportedOperationException(s"Namespace properties ${unsupported.mkString(", ")} are not supported by sparklance")
    storage.mkdirs(namespacePath(namespace))
  }

  override def alterNamespace(namespace: Array[String], changes: NamespaceChange*): Unit =
    throw new UnsupportedOperationException("sparklance namespaces have no properties to alter")

  override def dropNamespace(namespace: Array[String], cascade: Boolean): Boolean = LanceErrors.converting {
    if (!namespaceExists(namespace)) return false
    val path = namespacePath(namespace)
    val hasContent = storage.listDirectories(path).exists(!_.startsWith(".")) || storage.list(path).nonEmpty
    if (hasContent && !cascade) throw new NonEmptyNamespaceException(namespace)
    storage.deleteRecursively(path)
    true
  }

  // ---- tables ----

  override def listTables(namespace: Array[String]): Array[Identifier] = LanceErrors.converting {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace)
    storage.listDirectories(namespacePath(namespace)).filter(_.endsWith(".lance")).sorted
      .map(d => Identifier.of(namespace, d.stripSuffix(".lance")))
      .filter(id => dataset(id).exists).toArray
  }

  override def tableExists(ident: Identifier): Boolean =
    try resolve(ident).exists catch { case _: NoSuchTableException => false }

  override def loadTable(ident: Identifier): Table = LanceErrors.converting {
    val ds = try Some(resolve(ident)) catch { case _: NoSuchTableException => None }
    ds.flatMap(d => d.snapshotIfExists().map(openTable(ident, d, _)))
      .orElse(metadataTableOf(ident)).getOrElse(throw new NoSuchTableException(ident))
  }

  private def openTable(ident: Identifier, ds: Dataset, snapshot: Snapshot, timeTravel: Boolean = false): LanceTable = {
    ReservedColumns.checkExisting(quoted(ident), ds.path, snapshot.schema.fields.map(_.name))
    new LanceTable(quoted(ident), ds, snapshot, settings, timeTravel = timeTravel)
  }

  /**
   * `ns.t.history`, `ns.t.tags`, `ns.t.branches`, `ns.t.indices`, `ns.t.detail` and `ns.t.fragments` name metadata tables of table
   * `ns.t` (unless a real table has that name); `ns.t.branch_dev.history` those of a branch.
   */
  private def metadataTableOf(ident: Identifier): Option[Table] = ownerOf(ident) match {
    case None => None
    case Some(owner) =>
      lazy val ds = resolve(owner)
      val table: Option[Table] = ident.name() match {
        case HistoryTable.Name => Some(new HistoryTable(quoted(owner), ds))
        case TagsTable.Name => Some(new TagsTable(quoted(owner), ds))
        case BranchesTable.Name => Some(new BranchesTable(quoted(owner), ds))
        case IndicesTable.Name => Some(new IndicesTable(quoted(owner), ds))
        case DetailTable.Name => Some(new DetailTable(quoted(owner), ds))
        case FragmentsTable.Name => Some(new FragmentsTable(quoted(owner), ds))
        case _ => None
      }
      table.filter(_ => ds.exists)
  }

  /**
   * `VERSION AS OF v` or `VERSION AS OF 'tag'`: the table (or branch) as committed in version v,
   * or in the version the tag names, on the line the tag is on (tags are the table's, whichever
   * branch they name). A version cleanup removed is an error naming the oldest one left.
   */
  override def loadTable(ident: Identifier, version: String): Table = LanceErrors.converting {
    val named = resolve(ident)
    val (ds, v) = version.trim.toLongOption.map(named -> _).getOrElse {
      if (!named.exists) throw new NoSuchTableException(ident)
      val tag = new Tags(named).apply(version)
      tag.branch.fold(named.root)(new Branches(named).dataset) -> tag.version
    }
    val listing = ds.listing()
    if (listing.versions.isEmpty || listing.dropped) throw new NoSuchTableException(ident)
    // A version the table does not have: VersionNotFoundException, naming the latest (or the oldest left).
    openTable(ident, ds, listing.snapshot(v), timeTravel = true)
  }

  /** `TIMESTAMP AS OF t`: the newest version committed at or before t. */
  override def loadTable(ident: Identifier, timestampMicros: Long): Table = LanceErrors.converting {
    val ds = resolve(ident)
    val listing = ds.listing()
    if (listing.versions.isEmpty || listing.dropped) throw new NoSuchTableException(ident)
    val versions = listing.versions
    val snapshot = versions.reverseIterator.map(v => listing.snapshot(v))
      .find(s => s.commitMicros <= timestampMicros).getOrElse {
        val first = listing.snapshot(versions.head)
        def at(micros: Long) = java.time.Instant.EPOCH.plusNanos(micros * 1000)
        val why = if (versions.head > 1) s"the oldest version left, ${versions.head}, was committed at " +
            s"${at(first.commitMicros)}; cleanup (vacuum) removed the versions before it"
          else s"its first version was committed at ${at(first.commitMicros)}"
        throw LanceErrors(LanceErrorCondition.NoVersionAtTimestamp,
          Map("table" -> quoted(ident), "timestamp" -> at(timestampMicros).toString, "reason" -> why))
      }
    openTable(ident, ds, snapshot, timeTravel = true)
  }

  /** `CHANGES FROM ... TO ...` and the change-data reader: see [[LanceChangelog]]. */
  override def loadChangelog(ident: Identifier, context: ChangelogContext, options: CaseInsensitiveStringMap): Changelog = LanceErrors.converting {
    val ds = resolve(ident)
    if (!ds.exists) throw new NoSuchTableException(ident)
    val end = ds.snapshot()
    ReservedColumns.checkExisting(quoted(ident), ds.path, end.schema.fields.map(_.name))
    // Not UnsupportedOperationException: Spark reads that as "this catalog has no change data".
    if (!end.stableRowIds) throw new UnsupportedFeatureException(s"Change data of ${quoted(ident)} needs stable row ids, " +
      s"and the table was created without them. Create a copy that has them with CREATE TABLE ... TBLPROPERTIES " +
      s"('${TableProperties.EnableStableRowIds.name}'='true') AS SELECT * FROM ${quoted(ident)}")
    // A stream loads its changelog as a batch read does, but reads from its checkpoint's position,
    // so why the range cannot be read is the batch scan's error, not this one's (see LanceChangelog).
    val range = try Right(ChangelogRanges.commits(quoted(ident), ds, context.range()))
      catch { case NonFatal(e) => Left(LanceErrors.convert(e)) }
    new LanceChangelog(quoted(ident), ds, range.toOption.flatMap(_.snapshots.lastOption).getOrElse(end), range, context, settings)
  }

  override def createTable(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
      properties: util.Map[String, String]): Table = LanceErrors.converting {
    val staged = stageCreate(ident, columns, partitions, properties)
    staged.commitStagedChanges()
    loadTable(ident)
  }

  private def checkCreate(ident: Identifier, partitions: Array[Transform], properties: util.Map[String, String]): Unit = {
    if (TablePath.of(ident).isEmpty) {
      if (ident.namespace().isEmpty)
        throw new InvalidNameException(ident.name(), s"Table ${ident.name()} needs a namespace, e.g. $catalogName.db.${ident.name()}")
      if (!namespaceExists(ident.namespace())) throw new NoSuchNamespaceException(ident.namespace())
    }
    // The warehouse is the catalog's only record of its tables: a table elsewhere has no name here.
    Option(properties.get(TableCatalog.PROP_LOCATION)).map(TablePath.fromOption)
      .filterNot(location => TablePath.of(ident).contains(location) ||
        TablePath.of(ident).isEmpty && warehouseOption.isDefined && location == tablePath(ident))
      .foreach { location =>
        throw new UnsupportedFeatureException(s"Cannot create ${quoted(ident)} at LOCATION '$location': the tables of " +
          s"catalog $catalogName live in its warehouse. Create the table by its location instead: " +
          s"CREATE TABLE $catalogName.${TablePath.quoted(location)} ... (see docs/tables-by-location.md)")
      }
    // CREATE TABLE ... USING delta in this catalog would otherwise make a Lance table all the same.
    // The session's default source is what Spark's writers name when given no format
    // (`df.write.saveAsTable`, `writeStream.toTable`): the user asked for no format, so Lance.
    Option(properties.get(TableCatalog.PROP_PROVIDER))
      .filterNot(p => LanceCatalog.isLanceProvider(p) || p.equalsIgnoreCase(LanceCatalog.defaultSourceName))
      .foreach { provider =>
        throw new UnsupportedFeatureException(s"Cannot create ${quoted(ident)} USING $provider: catalog $catalogName " +
          s"makes Lance tables only. Leave USING out (or write USING lance), or create the table in a catalog of $provider")
      }
    Clustering.fromPartitioning(quoted(ident), partitions.toSeq)
  }

  /**
   * The properties of a CREATE with its CLUSTER BY columns as the clustering property; a
   * clustering property given beside a CLUSTER BY of other columns is refused.
   */
  private def clustered(ident: Identifier, partitions: Array[Transform], properties: util.Map[String, String]): util.Map[String, String] =
    Clustering.fromPartitioning(quoted(ident), partitions.toSeq).fold(properties) { columns =>
      val listed = columns.mkString(",")
      Option(properties.get(Clustering.Property)).map(Clustering.normalize).filter(_ != listed).foreach(other =>
        throw new InvalidTablePropertyException(quoted(ident), Clustering.Property, s"lists '$other', but CLUSTER BY names $listed: give one of them"))
      val all = new util.HashMap[String, String](properties)
      all.put(Clustering.Property, listed)
      all
    }

  /** CREATE / REPLACE TABLE with constraints in their column list: those are CHECK constraints the table keeps. */
  override def createTable(ident: Identifier, info: TableInfo): Table = LanceErrors.converting {
    val staged = stageCreate(ident, info)
    staged.commitStagedChanges()
    loadTable(ident)
  }

  override def stageCreate(ident: Identifier, info: TableInfo): StagedTable =
    withConstraints(ident, info)(stageCreate(ident, info.columns(), info.partitions(), info.properties()))

  override def stageReplace(ident: Identifier, info: TableInfo): StagedTable =
    withConstraints(ident, info)(stageReplace(ident, info.columns(), info.partitions(), info.properties()))

  override def stageCreateOrReplace(ident: Identifier, info: TableInfo): StagedTable =
    withConstraints(ident, info)(stageCreateOrReplace(ident, info.columns(), info.partitions(), info.properties()))

  /** The constraints `newTable` adds to the config of the table `stage` creates on this thread. */
  private val newConstraints = new ThreadLocal[Seq[org.apache.spark.sql.connector.catalog.constraints.Check]]

  private def withConstraints(ident: Identifier, info: TableInfo)(stage: => StagedTable): StagedTable = LanceErrors.converting {
    newConstraints.set(Option(info.constraints()).toSeq.flatten.map(CheckConstraints.accepted(quoted(ident), _)))
    try stage finally newConstraints.remove()
  }

  private def newTable(ident: Identifier, columns: Array[Column], properties: util.Map[String, String]) = {
    ReservedColumns.checkNew(quoted(ident), columns.map(_.name()).toSeq)
    // Vectors, blobs and NOT NULL columns declared by properties (see ColumnProperties) shape the schema.
    val (schema, props) = ColumnProperties(quoted(ident), Columns.toStruct(columns), properties.asScala.toMap)
    IdentityColumns.checkNew(quoted(ident), schema)
    val validated = TableProperties.validate(quoted(ident), props)
    val stored = validated.copy(config = validated.config ++ Option(newConstraints.get()).toSeq.flatten.map(CheckConstraints.entry))
    val lance = SparkTypes.toLance(schema, quoted(ident))
    TableProperties.checkAgainst(quoted(ident), lance, stored.config)
    sparklance.format.table.StorageVersion.checkColumns(quoted(ident),
      sparklance.format.table.StorageVersion.forWriting(quoted(ident), stored.config(sparklance.format.commit.Committer.StorageVersionKey)),
      lance.fields)
    (lance, stored, TableProperties.stableRowIds(quoted(ident), props))
  }

  override def stageCreate(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
      properties: util.Map[String, String]): StagedTable = LanceErrors.converting {
    checkCreate(ident, partitions, properties)
    if (tableExists(ident)) throw new TableAlreadyExistsException(ident)
    checkNotDropped(ident)
    val (schema, stored, stable) = newTable(ident, columns, clustered(ident, partitions, properties))
    new StagedLanceTable(quoted(ident), dataset(ident), None, schema, stored, stable, settings)
  }

  override def stageReplace(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
      properties: util.Map[String, String]): StagedTable = LanceErrors.converting {
    checkCreate(ident, partitions, properties)
    if (!tableExists(ident)) throw new CannotReplaceMissingTableException(ident)
    val (schema, stored, stable) = newTable(ident, columns, clustered(ident, partitions, properties))
    new StagedLanceTable(quoted(ident), dataset(ident), Some(dataset(ident).snapshot(forWrite = true)), schema, stored, stable, settings)
  }

  override def stageCreateOrReplace(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
      properties: util.Map[String, String]): StagedTable = LanceErrors.converting {
    checkCreate(ident, partitions, properties)
    val (schema, stored, stable) = newTable(ident, columns, clustered(ident, partitions, properties))
    val current = dataset(ident).snapshotIfExists(forWrite = true)
    if (current.isEmpty) checkNotDropped(ident)
    new StagedLanceTable(quoted(ident), dataset(ident), current, schema, stored, stable, settings)
  }

  // Spark 4 still routes the StructType variants here from some code paths.
  override def createTable(ident: Identifier, schema: StructType, partitions: Array[Transform],
      properties: util.Map[String, String]): Table =
    createTable(ident, Columns.fromStruct(schema), partitions, properties)

  /**
   * ALTER TABLE: see [[TableAlteration]]; each statement is one commit. The column changes of
   * Spark's automatic schema evolution are not committed here but staged: Spark loads the table
   * again right after (on this thread), gets it with the pending schema, and the statement's
   * write commits the schema change together with its data (see [[PendingSchema]]).
   */
  override def alterTable(ident: Identifier, changes: TableChange*): Table = LanceErrors.converting {
    pendingSchema.remove()
    val ds = resolve(ident)
    if (!ds.exists) throw new NoSuchTableException(ident)
    val alteration = new TableAlteration(quoted(ident), ds, settings)
    val constraints = changes.filter(c => c.isInstanceOf[TableChange.AddConstraint] || c.isInstanceOf[TableChange.DropConstraint])
    if (constraints.nonEmpty) {
      if (constraints.size != changes.size)
        throw new UnsupportedOperationException(s"ALTER TABLE ${quoted(ident)}: change constraints in statements of their own")
      new ConstraintAlteration(quoted(ident), ds, settings).apply(changes)
      loadTable(ident)
    } else if (LanceCatalog.calledBySchemaEvolution()) {
      val pending = alteration.stage(changes)
      pendingSchema.set(ident -> pending)
      new LanceTable(quoted(ident), ds, pending.view, settings, Some(pending))
    } else {
      alteration.apply(changes)
      loadTable(ident)
    }
  }

  /** The schema change staged by the last alterTable on this thread, until Spark loads the table for its write. */
  private val pendingSchema = new ThreadLocal[(Identifier, PendingSchema)]

  override def loadTable(ident: Identifier, writePrivileges: util.Set[TableWritePrivilege]): Table = LanceErrors.converting {
    val staged = Option(pendingSchema.get())
    pendingSchema.remove()
    staged match {
      case Some((id, pending)) if id == ident =>
        new LanceTable(quoted(ident), resolve(ident), pending.view, settings, Some(pending))
      case _ => loadTable(ident)
    }
  }

  /**
   * DROP TABLE without PURGE keeps the files. Where a directory moves atomically (local disks,
   * HDFS) the table moves to `<warehouse>/.trash/<namespace>/<name>-<millis>.lance`, from where it
   * can be moved back, and the name is free at once. On object stores a move is a copy of every
   * file that a failure can leave half done, so the files stay where they are and a marker drops
   * the table from the catalog (pylance still opens the path); the name stays taken until
   * `undrop_table` brings the table back or `purge_dropped_table` deletes its files.
   */
  override def dropTable(ident: Identifier): Boolean = LanceErrors.converting {
    refuseByLocation(ident, "DROP TABLE")
    val ds = dataset(ident)
    if (!ds.exists) return false
    if (storage.renamesAtomically(ds.path)) {
      val trash = Storage.join(trashDir(ident.namespace()), s"${ident.name()}-${System.currentTimeMillis()}.lance")
      storage.rename(ds.path, trash)
    } else ds.markDropped()
    // The trash keeps tables for trash_retention; this namespace's older ones go now. The drop
    // stands whatever happens here: the next drop or empty_trash finds what is left.
    try emptyTrash(settings.trashRetention, Some(ident.namespace())) catch {
      case scala.util.control.NonFatal(e) => LanceCatalog.log.warn(s"Emptying the trash after dropping ${quoted(ident)} failed", e)
    }
    true
  }

  // ---- the trash: tables DROP TABLE dropped with their files kept ----

  private def trashDir(namespace: Array[String]): String =
    namespace.foldLeft(Storage.join(warehouse, LanceCatalog.TrashDir))(Storage.join)

  /** The copies of `ident` that DROP TABLE moved to the trash, newest first, with when they were dropped. */
  private def trashed(ident: Identifier): Seq[(String, Long)] = {
    val dir = trashDir(ident.namespace())
    storage.listDirectories(dir).flatMap { name =>
      LanceCatalog.trashedName(name).collect { case (table, millis) if table == ident.name() => Storage.join(dir, name) -> millis }
    }.sortBy(-_._2)
  }

  /**
   * `undrop_table`: the table DROP TABLE dropped with its files kept, back under its name, on
   * every store: the newest copy in the trash (local disks, HDFS), or the table dropped in place
   * (object stores).
   */
  private[spark] def undrop(ident: Identifier): Dataset = {
    refuseByLocation(ident, "undrop_table")
    val ds = dataset(ident)
    if (ds.isDropped) ds.unmarkDropped()
    else trashed(ident).headOption match {
      case Some(_) if ds.exists => throw new TableAlreadyExistsException(ident)
      case Some((copy, _)) => storage.rename(copy, ds.path)
      case None => throw new IllegalArgumentException(s"${quoted(ident)} is not a dropped table: nothing of that name " +
        s"is in the trash (${LanceCatalog.TrashDir}) or dropped with its files kept; the trash keeps tables for " +
        s"${settings.trashRetention.toHours} hours (catalog option ${CatalogSettings.TrashRetention})")
    }
    ds
  }

  /**
   * Deletes the dropped tables (in the trash, or dropped in place on object stores) dropped more
   * than `olderThan` ago, in `namespace` only or in the whole warehouse. Returns their paths.
   */
  private[spark] def emptyTrash(olderThan: java.time.Duration, namespace: Option[Array[String]] = None): Seq[String] = {
    val before = System.currentTimeMillis() - olderThan.toMillis
    def namespaces(under: Array[String]): Seq[Array[String]] =
      listNamespaces(under).toSeq.flatMap(ns => ns +: namespaces(ns))
    val scope = namespace.fold(namespaces(Array.empty))(Seq(_))
    val trashedOld = scope.flatMap { ns =>
      val dir = trashDir(ns)
      storage.listDirectories(dir).flatMap(name => LanceCatalog.trashedName(name).collect {
        case (_, millis) if millis < before => Storage.join(dir, name)
      })
    }
    val droppedOld = scope.flatMap { ns =>
      storage.listDirectories(namespacePath(ns)).filter(_.endsWith(".lance")).map(Storage.join(namespacePath(ns), _))
        .filter(path => new Dataset(storage, path).droppedAtMillis.exists(_ < before))
    }
    (trashedOld ++ droppedOld).map { path => storage.deleteRecursively(path); path }
  }

  /** DROP TABLE ... PURGE deletes the files. On object stores the table is dropped first, so a purge cut short leaves a dropped table that `purge_dropped_table` finishes, never a live table missing files. */
  override def purgeTable(ident: Identifier): Boolean = LanceErrors.converting {
    refuseByLocation(ident, "DROP TABLE ... PURGE")
    val ds = dataset(ident)
    if (!ds.exists) return false
    if (!storage.renamesAtomically(ds.path)) ds.markDropped()
    storage.deleteRecursively(ds.path)
    true
  }

  /**
   * A table named by its location belongs to no catalog: dropping it would only delete files
   * (which the user can do) and renaming it would move them under every reader's feet.
   */
  private def refuseByLocation(ident: Identifier, statement: String): Unit = TablePath.of(ident).foreach { location =>
    throw new UnsupportedFeatureException(s"$statement is for tables of the catalog, not for a table named by its " +
      s"location ($location): delete or move its directory instead, or name it in a catalog with a warehouse")
  }

  /** Fails, naming what to do, if `ident` names a table dropped with its files kept. */
  private[spark] def checkNotDropped(ident: Identifier): Unit = {
    val ds = dataset(ident)
    if (ds.isDropped) throw new DroppedTableKeptException(quoted(ident), ds.path, catalogName)
  }

  /**
   * ALTER TABLE ... RENAME TO moves the table's directory, so it is refused on object stores,
   * where that is a copy of every file and not atomic: CREATE TABLE new AS SELECT * FROM old and
   * DROP TABLE old PURGE do it there, with a new table history.
   */
  override def renameTable(oldIdent: Identifier, newIdent: Identifier): Unit = LanceErrors.converting {
    Seq(oldIdent, newIdent).foreach(refuseByLocation(_, "ALTER TABLE ... RENAME"))
    if (!tableExists(oldIdent)) throw new NoSuchTableException(oldIdent)
    if (tableExists(newIdent)) throw new TableAlreadyExistsException(newIdent)
    checkNotDropped(newIdent)
    if (!namespaceExists(newIdent.namespace())) throw new NoSuchNamespaceException(newIdent.namespace())
    if (!storage.renamesAtomically(tablePath(oldIdent)))
      throw new UnsupportedFeatureException(s"Cannot rename ${quoted(oldIdent)}: its store (${Storage.scheme(warehouse).getOrElse("")}) " +
        s"has no atomic rename, and moving a table there copies every file. Copy it with CREATE TABLE " +
        s"${quoted(newIdent)} AS SELECT * FROM ${quoted(oldIdent)}, then DROP TABLE ${quoted(oldIdent)} PURGE")
    storage.rename(tablePath(oldIdent), tablePath(newIdent))
  }
}

object LanceCatalog {
  /** `ns.t.branch_<name>` names branch <name> of `ns.t`. */
  val BranchPrefix = "branch_"
  /** Where DROP TABLE moves tables on stores that move directories atomically: `<warehouse>/.trash/<namespace>/<name>-<millis>.lance`. */
  val TrashDir = ".trash"
  private val TrashedName = "(.+)-(\\d+)\\.lance".r
  /** The table name and drop time (epoch millis) of a directory in the trash. */
  def trashedName(directory: String): Option[(String, Long)] = directory match {
    case TrashedName(table, millis) => millis.toLongOption.map(table -> _)
    case _ => None
  }
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[LanceCatalog])

  /** USING values that mean a Lance table: the short name and the data source's class. */
  /** The source Spark's writers name when given no format (`spark.sql.sources.default`). */
  private def defaultSourceName: String =
    SparkSession.getActiveSession.fold("parquet")(_.conf.get("spark.sql.sources.default", "parquet"))

  def isLanceProvider(provider: String): Boolean =
    provider.equalsIgnoreCase(LanceDataSource.ShortName) || provider == classOf[LanceDataSource].getName

  /**
   * Whether Spark's automatic schema evolution is calling (its analyzer rule, which alters the
   * table and then loads it for the write). Spark passes no other sign of it to alterTable, and an
   * explicit ALTER TABLE must still commit on its own.
   */
  private def calledBySchemaEvolution(): Boolean =
    Thread.currentThread().getStackTrace.exists(_.getClassName.startsWith(SchemaEvolutionRule))

  private val SchemaEvolutionRule = "org.apache.spark.sql.catalyst.analysis.ResolveSchemaEvolution"
}
