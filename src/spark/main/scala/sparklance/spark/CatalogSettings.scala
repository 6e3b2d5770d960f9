package sparklance.spark

import java.time.Duration
import sparklance.format.InvalidOptionException
import sparklance.format.commit.CommitRetries
import sparklance.format.io.Storage
import sparklance.hadoop.Storages

/**
 * Settings shared by every table of a catalog, serializable so that tasks carry them:
 * `storageConf` configures Hadoop file systems for non-local warehouses (`spark.hadoop.*` entries
 * and the catalog's `hadoop.*` options), `commitRetries` bounds the retries of a commit against
 * concurrent writers, in number and in time.
 */
final case class CatalogSettings(storageConf: Map[String, String] = Map.empty, commitRetries: CommitRetries = CommitRetries(),
    readBatchBytes: Long = sparklance.format.table.FragmentScanner.DefaultBatchBytes,
    trashRetention: Duration = CatalogSettings.DefaultTrashRetention, useNullableQuerySchema: Boolean = true) {
  def storage(path: String): Storage = Storages.forPath(path, storageConf)

  override def toString: String =
    s"CatalogSettings(storageConf=${CatalogSettings.redacted(storageConf)}, commitRetries=${commitRetries.count}, commitRetryTime=${commitRetries.time.toSeconds}s, readBatchBytes=$readBatchBytes)"
}

object CatalogSettings {
  val CommitRetriesKey = "commit_retries"
  /** How long a commit keeps retrying against concurrent writers, at least (see CommitRetries). */
  val CommitRetryTime = "commit_retry_time"
  /** How long dropped tables stay recoverable (undrop_table) before DROP TABLE or empty_trash deletes them. */
  val TrashRetention = "trash_retention"
  val DefaultTrashRetention: Duration = Duration.ofDays(7)
  /** Decoded bytes a scan's batch aims at (a row larger than this is a batch of its own). */
  val ReadBatchBytes = "read_batch_bytes"
  /** false: CTAS and writeTo().create() keep the query's NOT NULL columns (Iceberg's use-nullable-query-schema). */
  val UseNullableQuerySchema = "use_nullable_query_schema"

  /**
   * Storage settings as logs and plans may show them: the keys only. Their values include
   * credentials (`fs.s3a.secret.key`, `fs.azure.account.key.*`, tokens...) under names no list
   * can foresee, so none is shown.
   */
  def redacted(storageConf: Map[String, String]): String =
    storageConf.keys.toSeq.sorted.map(k => s"$k=***").mkString("{", ", ", "}")

  def apply(catalogOptions: Map[String, String], sparkConf: Map[String, String]): CatalogSettings = {
    val hadoop = sparkConf.filter(_._1.startsWith("spark.hadoop.")) ++
      catalogOptions.collect { case (k, v) if k.startsWith("hadoop.") => k.stripPrefix("hadoop.") -> v }
    val retries = catalogOptions.get(CommitRetriesKey).map { v =>
      v.toIntOption.filter(_ >= 0).getOrElse(throw new InvalidOptionException(CommitRetriesKey, s"must be a non-negative integer, got '$v'"))
    }.getOrElse(CommitRetries.DefaultCount)
    def duration(key: String, default: Duration): Duration = catalogOptions.get(key).map { v =>
      val seconds = try org.apache.spark.network.util.JavaUtils.timeStringAsSec(v) catch { case _: NumberFormatException => -1L }
      if (seconds < 0) throw new InvalidOptionException(key, s"must be a duration such as '120s', '2min' or '7d', got '$v'")
      Duration.ofSeconds(seconds)
    }.getOrElse(default)
    val retryTime = duration(CommitRetryTime, CommitRetries.DefaultTime)
    val batchBytes = catalogOptions.get(ReadBatchBytes).map { v =>
      org.apache.spark.network.util.JavaUtils.byteStringAsBytes(v) match {
        case b if b > 0 => b
        case _ => throw new InvalidOptionException(ReadBatchBytes, s"must be a positive size such as '32m', got '$v'")
      }
    }.getOrElse(sparklance.format.table.FragmentScanner.DefaultBatchBytes)
    val nullableQuerySchema = catalogOptions.get(UseNullableQuerySchema).map { v =>
      v.trim.toLowerCase(java.util.Locale.ROOT).toBooleanOption
        .getOrElse(throw new InvalidOptionException(UseNullableQuerySchema, s"must be true or false, got '$v'"))
    }.getOrElse(true)
    CatalogSettings(hadoop, CommitRetries(retries, retryTime), batchBytes, duration(TrashRetention, DefaultTrashRetention),
      nullableQuerySchema)
  }
}
