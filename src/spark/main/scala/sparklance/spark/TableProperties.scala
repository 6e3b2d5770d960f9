package sparklance.spark

import sparklance.format.commit.{Committer, Isolation, Operation}
import sparklance.format.maintenance.{CleanupPolicy, CompactionOptions}
import sparklance.format.table.{FragmentWriter, LanceSchema, Snapshot, StorageVersion}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.layout.Clustering
import sparklance.spark.rowlevel.RewriteMode

/**
 * The TBLPROPERTIES of a sparklance table: the registry of the properties sparklance understands
 * (each a typed [[TableProperty]], read through it by the code that uses it), and where each key
 * of a statement goes in the Lance manifest:
 *  - sparklance's own properties (named like pylance's write_dataset arguments), kept in the table
 *    config under `sparklance.<name>`; `data_storage_version` and `enable_stable_row_ids` are the
 *    table's format, fixed when the table is created;
 *  - `lance.*` keys, kept in the config as they are, where Lance reads its own (compaction,
 *    automatic cleanup); those sparklance also reads are checked;
 *  - any other key with a dot (a user's `owner.team`), and Spark's `comment` and `collation`,
 *    kept in the table metadata, which pylance shows as `ds.metadata`.
 * A key without a dot that is none of these, or an unknown one under `sparklance.` or under a
 * property's name (`auto_compact.`), is refused with the nearest known name: a typo must not be
 * stored as metadata and leave the table without what it asked for. Spark adds its own reserved
 * keys at CREATE (owner, provider, location, ...), which are ignored.
 */
object TableProperties {
  private def setting(name: String) = Some(s"sparklance.$name")

  val DataStorageVersion: TableProperty[StorageVersion] = TableProperty("data_storage_version",
    PropertyKind.Choice[StorageVersion](StorageVersion.Written, _.name, Map("legacy" -> StorageVersion.Legacy, "stable" -> StorageVersion.V2_2)),
    StorageVersion.Default, None, "Lance data file format of the table's files; chosen at CREATE / REPLACE only")
  val EnableStableRowIds: TableProperty[Boolean] = TableProperty("enable_stable_row_ids", PropertyKind.Bool, false, None,
    "stable row ids, row lineage and change data; chosen at CREATE / REPLACE only")
  val MaxRowsPerFile: TableProperty[Long] = TableProperty("max_rows_per_file",
    PropertyKind.Count(1, FragmentWriter.MaxRowsPerFile), FragmentWriter.DefaultMaxRowsPerFile, Some(Committer.MaxRowsPerFileKey),
    "new data files (fragments) are cut at this many rows")
  val IsolationLevel: TableProperty[Isolation] = TableProperty(Isolation.Key,
    PropertyKind.Choice[Isolation](Seq(Isolation.Serializable, Isolation.Snapshot), _.name), Isolation.Serializable,
    setting(Isolation.Key), "what statements that read the table guarantee against concurrent writers")
  val RewriteModeProperty: TableProperty[RewriteMode] = TableProperty("rewrite_mode",
    PropertyKind.Choice[RewriteMode](RewriteMode.all, _.name), RewriteMode.Auto, setting("rewrite_mode"),
    "how UPDATE and MERGE write updated rows")
  val OptimizeWrite: TableProperty[Boolean] = TableProperty("optimize_write", PropertyKind.Bool, true, setting("optimize_write"),
    "appends rebalance their input into about one fragment per max_rows_per_file")
  val AutoCompact: TableProperty[Boolean] = TableProperty("auto_compact", PropertyKind.Bool, false, setting("auto_compact"),
    "compact after a write once enough fragments would be rewritten")
  val AutoCompactMinFragments: TableProperty[Long] = TableProperty("auto_compact.min_fragments",
    PropertyKind.Count(2, Long.MaxValue), 8L, setting("auto_compact.min_fragments"),
    "how many fragments a compaction must rewrite for auto_compact to run it")
  val ZoneMapColumns: TableProperty[String] = TableProperty(ZoneMapMaintenance.Property,
    PropertyKind.Columns("top-level column names separated by commas, '*' (all) or '' (none)", ZoneMapMaintenance.validate),
    ZoneMapMaintenance.Default, Some(ZoneMapMaintenance.ConfigKey),
    "columns whose zone maps every write keeps up to date; unset: the first 32 top-level columns of types with zone maps")
  val ClusteringColumns: TableProperty[String] = TableProperty(Clustering.Property,
    PropertyKind.Columns("top-level column names separated by commas, or '' (none)", Clustering.normalize),
    "", Some(Clustering.ConfigKey),
    "columns appends sort rows by and compaction lays rows out by (CLUSTER BY sets it); Z-order for several")

  /** Every property sparklance understands, in the order the docs list them. */
  val all: Seq[TableProperty[_]] = Seq(DataStorageVersion, EnableStableRowIds, MaxRowsPerFile, IsolationLevel,
    RewriteModeProperty, OptimizeWrite, AutoCompact, AutoCompactMinFragments, ZoneMapColumns, ClusteringColumns)
  private val byName: Map[String, TableProperty[_]] = all.map(p => p.name -> p).toMap
  private val settings = all.filterNot(_.fixedAtCreation)

  /**
   * Not a property: the version a statement reads, which SHOW TBLPROPERTIES showed once. It is no
   * longer shown, so that SHOW CREATE TABLE replays; `<table>.history` lists the versions.
   */
  private val ShownVersion = "version"
  /** Spark's reserved properties it adds at CREATE on its own, which the table does not store. */
  private val sparkAdded = Set("owner", "provider", "location", "external", "is_managed_location")
  /** Spark's reserved properties a user gives (COMMENT, DEFAULT COLLATION), kept in the table metadata. */
  private val sparkKept = Set("comment", "collation", "table_type")
  /** Spark passes a CREATE's OPTIONS as properties twice: as they are (checked) and under this prefix (skipped). */
  private val OptionPrefix = "option."

  /** What a table stores of its properties: config entries and table metadata entries. */
  final case class Stored(config: Map[String, String], metadata: Map[String, String])

  /** Validates CREATE TABLE properties and returns what to store in the manifest. */
  def validate(table: String, props: Map[String, String]): Stored = {
    val settable = props.filterNot { case (k, _) =>
      sparkAdded.contains(k) || k.startsWith(OptionPrefix) || byName.get(k).exists(_.fixedAtCreation)
    }
    val version = props.get(DataStorageVersion.name).fold(StorageVersion.Default)(DataStorageVersion.parse(table, _))
    stableRowIds(table, props)
    val stored = store(table, settable)
    stored.copy(config = stored.config + (Committer.StorageVersionKey -> version.name))
  }

  /** Refuses, as a property error, `zonemap_columns` naming columns `schema` lacks or that have no zone map. */
  def checkAgainst(table: String, schema: LanceSchema, config: Map[String, String]): Unit = {
    try ZoneMapMaintenance.check(table, schema, config) catch {
      case e: IllegalArgumentException => throw new InvalidTablePropertyException(table, ZoneMapColumns.name, e.getMessage)
    }
    try Clustering.check(table, SparkTypes.toSpark(schema, table), config) catch {
      case e: IllegalArgumentException => throw new InvalidTablePropertyException(table, ClusteringColumns.name, e.getMessage)
    }
  }

  /** Whether CREATE / REPLACE asks for stable row ids (a choice Lance only allows at creation). */
  def stableRowIds(table: String, props: Map[String, String]): Boolean =
    props.get(EnableStableRowIds.name).exists(EnableStableRowIds.parse(table, _))

  /** Classifies and checks properties (none of them fixed) into config and table metadata. */
  private def store(table: String, props: Map[String, String]): Stored = {
    val config = Map.newBuilder[String, String]
    val metadata = Map.newBuilder[String, String]
    for ((k, v) <- props) byName.get(k) match {
      case Some(p) => config += p.configKey.get -> p.normalize(table, v)
      case None if k.startsWith("lance.") => config += k -> v
      case None if sparkKept.contains(k) || !inOurNamespace(k) => metadata += k -> v
      case None => throw unknown(table, k)
    }
    val stored = Stored(config.result(), metadata.result())
    // Refuse what Lance could not parse either (its compaction and cleanup read these keys).
    withTable(table)(CompactionOptions.resolve(Map.empty, stored.config))
    withTable(table)(CleanupPolicy.automatic(stored.config.filter(_._1.startsWith(CleanupPolicy.AutoPrefix)), 0))
    stored
  }

  /** Keys sparklance answers for: no dot, under `sparklance.`, or under a property's own name. */
  private def inOurNamespace(key: String): Boolean =
    !key.contains('.') || key.startsWith("sparklance.") || all.exists(p => key.startsWith(p.name + "."))

  private def unknown(table: String, key: String): InvalidTablePropertyException = {
    if (key == ShownVersion) return new InvalidTablePropertyException(table, key, "is the version a statement reads, which " +
      "<table>.history lists; it cannot be set (leave it out of the statement)")
    val bare = key.stripPrefix("sparklance.")
    val nearest = all.map(p => p.name -> editDistance(bare.toLowerCase, p.name)).minBy(_._2)
    val hint = if (nearest._2 <= math.max(2, nearest._1.length / 3)) s"did you mean '${nearest._1}'? " else ""
    val where = if (key.startsWith("sparklance.")) "the table config keys under sparklance. are its own and set through its properties; "
      else ""
    new InvalidTablePropertyException(table, key, s"sparklance has no such property; $hint$where" +
      s"its properties are ${all.map(_.name).mkString(", ")}. Keys with a dot are kept as they are: " +
      "'lance.*' in the table config for Lance, others (e.g. 'owner.team') as table metadata (docs/configuration.md)")
  }

  /** Levenshtein distance, for the nearest known name to a mistyped one. */
  private def editDistance(a: String, b: String): Int = {
    var prev = Array.tabulate(b.length + 1)(identity)
    for (i <- 1 to a.length) {
      val cur = new Array[Int](b.length + 1)
      cur(0) = i
      for (j <- 1 to b.length)
        cur(j) = math.min(math.min(cur(j - 1) + 1, prev(j) + 1), prev(j - 1) + (if (a(i - 1) == b(j - 1)) 0 else 1))
      prev = cur
    }
    prev(b.length)
  }

  private def withTable[T](table: String)(body: => T): T =
    try body catch {
      case e: InvalidTablePropertyException => throw e
      case e: IllegalArgumentException => throw new IllegalArgumentException(s"${e.getMessage} (table $table)", e)
    }

  /**
   * ALTER TABLE SET / UNSET TBLPROPERTIES on `snapshot` as one UpdateConfig; unsetting a setting
   * restores its default. A format property set to the value the table has is no change; another
   * value is refused by name, with how to get a table that has it.
   */
  def change(table: String, snapshot: Snapshot, set: Map[String, String], unset: Set[String]): Operation.UpdateConfig = {
    (set.keySet ++ unset).find(ColumnProperties.isColumnKey).foreach { k =>
      throw new InvalidTablePropertyException(table, k, "declares a column when a table is created, and is no property " +
        "of an existing table" + (if (k == ColumnProperties.NotNullColumns) s": make a column NOT NULL with CALL " +
          "<catalog>.system.set_not_null(table => ..., column => ...), which checks that it holds no NULL"
        else if (k.endsWith(ColumnProperties.VectorSuffix) && set.contains(k)) ": set it in an ALTER TABLE ... SET TBLPROPERTIES " +
          "of its own (it makes a list column a vector, writing the column anew)"
        else if (k.endsWith(ColumnProperties.VectorSuffix)) ": a vector column stays a vector; copy it into a new ARRAY column " +
          "(ADD COLUMNS, then UPDATE) to have a list again"
        else ": a column's encoding cannot change by a property; copy the table with CREATE TABLE ... " +
          "TBLPROPERTIES (...) AS SELECT"))
    }
    val (format, rest) = set.partition { case (k, _) => byName.get(k).exists(_.fixedAtCreation) }
    for ((k, v) <- format if !hasAlready(table, snapshot, k, v)) refuseChange(table, k)
    unset.filter(k => byName.get(k).exists(_.fixedAtCreation)).foreach(refuseChange(table, _))
    val stored = store(table, rest)
    val unsetKeys = unset.map { k =>
      byName.get(k).map(_.configKey.get).getOrElse {
        // A key stored before names were checked (or by pylance) may still be removed.
        if (k.startsWith("sparklance.") || (inOurNamespace(k) && !sparkKept.contains(k) && !snapshot.tableMetadata.contains(k)))
          throw unknown(table, k)
        k
      }
    }
    val (unsetConfig, unsetMetadata) = unsetKeys.partition(k => k.startsWith("sparklance.") || k.startsWith("lance."))
    Operation.UpdateConfig(stored.config, unsetConfig, stored.metadata, unsetMetadata)
  }

  private def hasAlready(table: String, snapshot: Snapshot, key: String, value: String): Boolean = key match {
    case DataStorageVersion.name => StorageVersion.parse(snapshot.dataStorageVersion).contains(DataStorageVersion.parse(table, value))
    case EnableStableRowIds.name => EnableStableRowIds.parse(table, value) == snapshot.stableRowIds
    case _ => false
  }

  /** The properties fixed at creation cannot change: they are the table's data format. */
  def refuseChange(table: String, key: String): Nothing =
    if (key == EnableStableRowIds.name) throw new InvalidTablePropertyException(table, key,
      s"cannot be changed on an existing table: Lance (pylance 14 too) assigns stable row ids only to tables created with " +
        s"them. Copy the table into one that has them: CREATE TABLE <new name> TBLPROPERTIES ('${EnableStableRowIds.name}' = " +
        s"'true') AS SELECT * FROM $table (then, if the name matters, DROP TABLE $table and ALTER TABLE <new name> RENAME TO it)")
    else throw new InvalidTablePropertyException(table, key,
      s"cannot be changed on an existing table: it is the format of its data files, chosen at creation. " +
        s"Copy the table: CREATE TABLE <new name> TBLPROPERTIES ('$key' = ...) AS SELECT * FROM $table")

  /** The properties Spark shows (DESCRIBE TABLE EXTENDED, SHOW TBLPROPERTIES) for a snapshot. */
  def describe(snapshot: Snapshot): Map[String, String] = {
    val config = snapshot.config
    Map(
      DataStorageVersion.name -> snapshot.dataStorageVersion,
      EnableStableRowIds.name -> snapshot.stableRowIds.toString,
      "provider" -> "lance",
      IsolationLevel.name -> isolation(snapshot, Map.empty).name) ++
      settings.flatMap(s => config.get(s.configKey.get).map(s.name -> _)) ++
      config.filter(_._1.startsWith("lance.")) ++ snapshot.tableMetadata.filterNot(e => IdentityColumns.isHighWaterMarkKey(e._1))
  }

  /** A statement's isolation: its `isolation_level` option, else the table's property, else serializable. */
  def isolation(snapshot: Snapshot, options: Map[String, String]): Isolation = IsolationLevel.of(options, snapshot.config)

  /** The table's rows per data file (see FragmentWriter.maxRowsPerFile, which clamps what other writers stored). */
  def maxRowsPerFile(config: Map[String, String]): Long = FragmentWriter.maxRowsPerFile(config)
}
