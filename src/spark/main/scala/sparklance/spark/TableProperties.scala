package sparklance.spark

import sparklance.format.commit.{Committer, Isolation}
import sparklance.format.maintenance.{CleanupPolicy, CompactionOptions}
import sparklance.format.table.{FragmentWriter, Snapshot, StorageVersion}
import sparklance.spark.maintenance.AutoCompaction
import sparklance.spark.write.OptimizedWrite

/**
 * The TBLPROPERTIES sparklance understands, named like pylance's write_dataset arguments.
 * Spark adds its own reserved keys (owner, provider, location, comment...), which are ignored.
 */
object TableProperties {
  val DataStorageVersion = "data_storage_version"
  val EnableStableRowIds = "enable_stable_row_ids"
  val MaxRowsPerFile = "max_rows_per_file"
  val IsolationLevel: String = Isolation.Key
  private val IsolationKey = "sparklance.isolation_level"

  private val CompactionPrefix = CompactionOptions.ConfigPrefix
  private val CleanupPrefix = CleanupPolicy.AutoPrefix
  private val Known = Seq(DataStorageVersion, EnableStableRowIds, MaxRowsPerFile, IsolationLevel, AutoCompaction.Enabled,
    AutoCompaction.MinFragments, OptimizedWrite.Property)

  private val sparkReserved = Set("owner", "provider", "location", "comment", "external", "is_managed_location")

  /** Validates CREATE TABLE properties and returns the table config to store in the manifest. */
  def validate(table: String, props: Map[String, String]): Map[String, String] = {
    props.keys.filterNot(k => sparkReserved.contains(k) || k.startsWith("option.") ||
        k.startsWith(CompactionPrefix) || Lance.cleanupKeys.contains(k) || Known.contains(k)).toSeq.sorted.headOption.foreach { k =>
      throw new IllegalArgumentException(s"Unknown table property '$k' for $table; sparklance knows " +
        s"${Known.mkString(", ")}, $CompactionPrefix* (pylance's compaction options) and " +
        s"${Lance.cleanupKeys.mkString(", ")} (Lance's automatic cleanup)")
    }
    val cleanup = props.filter(p => Lance.cleanupKeys.contains(p._1))
    CleanupPolicy.automatic(cleanup, 0) // refuses values Lance could not parse either
    props.get(AutoCompaction.Enabled).foreach(v => if (!Set("true", "false").contains(v.toLowerCase))
      throw new IllegalArgumentException(s"${AutoCompaction.Enabled} must be true or false, got '$v'"))
    props.get(AutoCompaction.MinFragments).foreach(v => if (v.toLongOption.forall(_ < 2))
      throw new IllegalArgumentException(s"${AutoCompaction.MinFragments} must be an integer of 2 or more, got '$v'"))
    val compaction = props.filter(_._1.startsWith(CompactionPrefix))
    CompactionOptions.resolve(Map.empty, compaction) // refuses values pylance could not parse either
    props.get(IsolationLevel).foreach(Isolation.parse)
    val version = props.get(DataStorageVersion).fold(StorageVersion.Default)(v => StorageVersion.parse(v).getOrElse(
      throw new IllegalArgumentException(s"Unsupported $DataStorageVersion '$v' for $table: sparklance writes and reads " +
        s"${StorageVersion.Written.map(_.name).mkString(", ")} (and pylance's aliases legacy = 2.0, stable = 2.2)")))
    stableRowIds(props)
    props.get(MaxRowsPerFile).foreach { v =>
      if (v.toLongOption.forall(_ <= 0)) throw new IllegalArgumentException(s"$MaxRowsPerFile must be a positive integer, got '$v'")
      if (v.toLong > FragmentWriter.MaxRowsPerFile) throw new IllegalArgumentException(
        s"$MaxRowsPerFile '$v' for $table is above Lance's limit of ${FragmentWriter.MaxRowsPerFile} rows per data file " +
          s"(a fragment's row count and row offsets are unsigned 32-bit numbers); use at most ${FragmentWriter.MaxRowsPerFile}")
    }
    Map(Committer.StorageVersionKey -> version.name) ++ props.get(MaxRowsPerFile).map(Committer.MaxRowsPerFileKey -> _) ++
      props.get(IsolationLevel).map(v => IsolationKey -> Isolation.parse(v).name) ++ compaction ++ cleanup ++
      props.get(AutoCompaction.Enabled).map(v => AutoCompaction.EnabledKey -> v.toLowerCase) ++
      props.get(AutoCompaction.MinFragments).map(AutoCompaction.MinFragmentsKey -> _) ++
      props.get(OptimizedWrite.Property).map(v => OptimizedWrite.ConfigKey -> OptimizedWrite.validate(v))
  }

  /** Keys Lance itself reads from the table config, stored as they are. */
  private object Lance {
    val cleanupKeys: Seq[String] = Seq(CleanupPolicy.AutoInterval, CleanupPolicy.AutoOlderThan, CleanupPolicy.AutoRetainVersions)
  }

  /** Whether CREATE / REPLACE asks for stable row ids (a choice Lance only allows at creation). */
  def stableRowIds(props: Map[String, String]): Boolean = props.get(EnableStableRowIds).map(_.toLowerCase) match {
    case None | Some("false") => false
    case Some("true") => true
    case Some(v) => throw new IllegalArgumentException(s"$EnableStableRowIds must be true or false, got '$v'")
  }

  /** ALTER TABLE SET TBLPROPERTIES: none can change after creation; stable row ids least of all. */
  def refuseChange(table: String, key: String): Nothing =
    if (key == EnableStableRowIds) throw new UnsupportedOperationException(
      s"$EnableStableRowIds cannot be changed on the existing table $table: Lance assigns stable row ids only to tables " +
        s"created with them. Create a new table with TBLPROPERTIES ('$EnableStableRowIds'='true') AS SELECT from this one")
    else throw new UnsupportedOperationException(s"ALTER TABLE is not supported by sparklance yet ($table: property $key)")

  /** The properties Spark shows (DESCRIBE TABLE EXTENDED, SHOW TBLPROPERTIES) for a snapshot. */
  def describe(snapshot: Snapshot): Map[String, String] = Map(
    DataStorageVersion -> snapshot.dataStorageVersion,
    EnableStableRowIds -> snapshot.stableRowIds.toString,
    "version" -> snapshot.version.toString,
    "provider" -> "lance",
    IsolationLevel -> isolation(snapshot, Map.empty).name) ++ snapshot.config.get(Committer.MaxRowsPerFileKey).map(MaxRowsPerFile -> _) ++
    snapshot.config.filter(c => c._1.startsWith(CompactionPrefix) || c._1.startsWith(CleanupPrefix)) ++
    snapshot.config.get(AutoCompaction.EnabledKey).map(AutoCompaction.Enabled -> _) ++
    snapshot.config.get(AutoCompaction.MinFragmentsKey).map(AutoCompaction.MinFragments -> _) ++
    snapshot.config.get(OptimizedWrite.ConfigKey).map(OptimizedWrite.Property -> _)

  /** A statement's isolation: its `isolation_level` option, else the table's property, else serializable. */
  def isolation(snapshot: Snapshot, options: Map[String, String]): Isolation =
    options.get(IsolationLevel).orElse(snapshot.config.get(IsolationKey)).map(Isolation.parse).getOrElse(Isolation.Serializable)

  /** The table's rows per data file (see FragmentWriter.maxRowsPerFile). */
  def maxRowsPerFile(config: Map[String, String]): Long = FragmentWriter.maxRowsPerFile(config)
}
