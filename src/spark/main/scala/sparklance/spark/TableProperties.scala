package sparklance.spark

import sparklance.format.commit.{Committer, Isolation, Operation}
import sparklance.format.maintenance.{CleanupPolicy, CompactionOptions}
import sparklance.format.table.{FragmentWriter, Snapshot, StorageVersion}
import sparklance.spark.indexing.ZoneMapMaintenance
import sparklance.spark.maintenance.AutoCompaction
import sparklance.spark.rowlevel.RewriteMode
import sparklance.spark.write.OptimizedWrite

/**
 * The TBLPROPERTIES of a sparklance table, and where each kind lives in the Lance manifest:
 *  - sparklance's own settings (named like pylance's write_dataset arguments), kept in the table
 *    config under `sparklance.<name>`; `data_storage_version` and `enable_stable_row_ids` are
 *    fixed when the table is created (they are the data format and a feature flag, not config);
 *  - `lance.*` keys, kept in the config as they are, where Lance reads its own (compaction,
 *    automatic cleanup); those sparklance also reads are checked;
 *  - any other key (a user's, or Spark's `comment`), kept in the table metadata, which pylance
 *    shows as `ds.metadata`.
 * Spark adds its own reserved keys at CREATE (owner, provider, location, ...), which are ignored.
 */
object TableProperties {
  val DataStorageVersion = "data_storage_version"
  val EnableStableRowIds = "enable_stable_row_ids"
  val MaxRowsPerFile = "max_rows_per_file"
  val IsolationLevel: String = Isolation.Key
  private val IsolationKey = "sparklance.isolation_level"

  /** A sparklance setting: its property name, its config key, and the check that normalizes a value. */
  private final case class Setting(property: String, configKey: String, check: String => String)

  private def positiveRows(v: String): String = {
    if (v.toLongOption.forall(_ <= 0)) throw new IllegalArgumentException(s"$MaxRowsPerFile must be a positive integer, got '$v'")
    if (v.toLong > FragmentWriter.MaxRowsPerFile) throw new IllegalArgumentException(
      s"$MaxRowsPerFile '$v' is above Lance's limit of ${FragmentWriter.MaxRowsPerFile} rows per data file " +
        s"(a fragment's row count and row offsets are unsigned 32-bit numbers); use at most ${FragmentWriter.MaxRowsPerFile}")
    v
  }

  private def trueOrFalse(name: String)(v: String): String = v.toLowerCase match {
    case b @ ("true" | "false") => b
    case _ => throw new IllegalArgumentException(s"$name must be true or false, got '$v'")
  }

  private val settings: Seq[Setting] = Seq(
    Setting(MaxRowsPerFile, Committer.MaxRowsPerFileKey, positiveRows),
    Setting(IsolationLevel, IsolationKey, v => Isolation.parse(v).name),
    Setting(AutoCompaction.Enabled, AutoCompaction.EnabledKey, trueOrFalse(AutoCompaction.Enabled)),
    Setting(AutoCompaction.MinFragments, AutoCompaction.MinFragmentsKey, v =>
      if (v.toLongOption.forall(_ < 2)) throw new IllegalArgumentException(
        s"${AutoCompaction.MinFragments} must be an integer of 2 or more, got '$v'") else v),
    Setting(OptimizedWrite.Property, OptimizedWrite.ConfigKey, OptimizedWrite.validate),
    Setting(RewriteMode.Property, RewriteMode.ConfigKey, v => RewriteMode.parse(v).name),
    Setting(ZoneMapMaintenance.Property, ZoneMapMaintenance.ConfigKey, ZoneMapMaintenance.validate))

  /** Properties only CREATE / REPLACE can set. */
  private val fixed = Seq(DataStorageVersion, EnableStableRowIds)
  private val sparkReserved = Set("owner", "provider", "location", "external", "is_managed_location")

  /** What a table stores of its properties: config entries and table metadata entries. */
  final case class Stored(config: Map[String, String], metadata: Map[String, String])

  /** Validates CREATE TABLE properties and returns what to store in the manifest. */
  def validate(table: String, props: Map[String, String]): Stored = {
    val given = props.filterNot { case (k, _) => sparkReserved.contains(k) || k.startsWith("option.") || fixed.contains(k) }
    val version = props.get(DataStorageVersion).fold(StorageVersion.Default)(v => StorageVersion.parse(v).getOrElse(
      throw new IllegalArgumentException(s"Unsupported $DataStorageVersion '$v' for $table: sparklance writes and reads " +
        s"${StorageVersion.Written.map(_.name).mkString(", ")} (and pylance's aliases legacy = 0.1, stable = 2.2)")))
    stableRowIds(props)
    val stored = store(table, given)
    stored.copy(config = stored.config + (Committer.StorageVersionKey -> version.name))
  }

  /** Classifies and checks properties (none of them fixed) into config and table metadata. */
  private def store(table: String, props: Map[String, String]): Stored = {
    val config = Map.newBuilder[String, String]
    val metadata = Map.newBuilder[String, String]
    for ((k, v) <- props) settings.find(_.property == k) match {
      case Some(s) => config += s.configKey -> withTable(table)(s.check(v))
      case None if k.startsWith("sparklance.") => throw new IllegalArgumentException(
        s"Table property '$k' of $table is reserved for sparklance's own config; its settings are " +
          settings.map(_.property).mkString(", "))
      case None if k.startsWith("lance.") => config += k -> v
      case None => metadata += k -> v
    }
    val stored = Stored(config.result(), metadata.result())
    // Refuse what Lance could not parse either (its compaction and cleanup read these keys).
    CompactionOptions.resolve(Map.empty, stored.config)
    CleanupPolicy.automatic(stored.config.filter(_._1.startsWith(CleanupPolicy.AutoPrefix)), 0)
    stored
  }

  private def withTable[T](table: String)(body: => T): T =
    try body catch { case e: IllegalArgumentException => throw new IllegalArgumentException(s"${e.getMessage} (table $table)", e) }

  /**
   * ALTER TABLE SET / UNSET TBLPROPERTIES as one UpdateConfig. The fixed properties are refused by
   * name; unsetting a sparklance setting restores its default.
   */
  def change(table: String, set: Map[String, String], unset: Set[String]): Operation.UpdateConfig = {
    (set.keySet ++ unset).find(fixed.contains).foreach(refuseChange(table, _))
    val stored = store(table, set)
    val (unsetConfig, unsetMetadata) = unset.map(k => settings.find(_.property == k).map(_.configKey).getOrElse(k))
      .partition(k => k.startsWith("sparklance.") || k.startsWith("lance."))
    Operation.UpdateConfig(stored.config, unsetConfig, stored.metadata, unsetMetadata)
  }

  /** Whether CREATE / REPLACE asks for stable row ids (a choice Lance only allows at creation). */
  def stableRowIds(props: Map[String, String]): Boolean = props.get(EnableStableRowIds).map(_.toLowerCase) match {
    case None | Some("false") => false
    case Some("true") => true
    case Some(v) => throw new IllegalArgumentException(s"$EnableStableRowIds must be true or false, got '$v'")
  }

  /** The properties fixed at creation cannot change: they are the table's data format. */
  def refuseChange(table: String, key: String): Nothing =
    if (key == EnableStableRowIds) throw new UnsupportedOperationException(
      s"$EnableStableRowIds cannot be changed on the existing table $table: Lance assigns stable row ids only to tables " +
        s"created with them. Create a new table with TBLPROPERTIES ('$EnableStableRowIds'='true') AS SELECT from this one")
    else throw new UnsupportedOperationException(
      s"$key cannot be changed on the existing table $table: it is the format of its data files, chosen at creation. " +
        s"Create a new table with TBLPROPERTIES ('$key'=...) AS SELECT from this one")

  /** The properties Spark shows (DESCRIBE TABLE EXTENDED, SHOW TBLPROPERTIES) for a snapshot. */
  def describe(snapshot: Snapshot): Map[String, String] = {
    val config = snapshot.config
    Map(
      DataStorageVersion -> snapshot.dataStorageVersion,
      EnableStableRowIds -> snapshot.stableRowIds.toString,
      "version" -> snapshot.version.toString,
      "provider" -> "lance",
      IsolationLevel -> isolation(snapshot, Map.empty).name) ++
      settings.flatMap(s => config.get(s.configKey).map(s.property -> _)) ++
      config.filter(_._1.startsWith("lance.")) ++ snapshot.tableMetadata
  }

  /** A statement's isolation: its `isolation_level` option, else the table's property, else serializable. */
  def isolation(snapshot: Snapshot, options: Map[String, String]): Isolation =
    options.get(IsolationLevel).orElse(snapshot.config.get(IsolationKey)).map(Isolation.parse).getOrElse(Isolation.Serializable)

  /** The table's rows per data file (see FragmentWriter.maxRowsPerFile). */
  def maxRowsPerFile(config: Map[String, String]): Long = FragmentWriter.maxRowsPerFile(config)
}
