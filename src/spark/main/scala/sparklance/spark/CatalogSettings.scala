package sparklance.spark

import sparklance.format.io.Storage
import sparklance.hadoop.Storages

/**
 * Settings shared by every table of a catalog, serializable so that tasks carry them:
 * `storageConf` configures Hadoop file systems for non-local warehouses (`spark.hadoop.*` entries
 * and the catalog's `hadoop.*` options), `commitRetries` bounds the attempts of a commit against
 * concurrent writers.
 */
final case class CatalogSettings(storageConf: Map[String, String] = Map.empty, commitRetries: Int = 20,
    readBatchBytes: Long = sparklance.format.table.FragmentScanner.DefaultBatchBytes) {
  def storage(path: String): Storage = Storages.forPath(path, storageConf)

  override def toString: String =
    s"CatalogSettings(storageConf=${CatalogSettings.redacted(storageConf)}, commitRetries=$commitRetries, readBatchBytes=$readBatchBytes)"
}

object CatalogSettings {
  val CommitRetries = "commit_retries"
  /** Decoded bytes a scan's batch aims at (a row larger than this is a batch of its own). */
  val ReadBatchBytes = "read_batch_bytes"

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
    val retries = catalogOptions.get(CommitRetries).map { v =>
      v.toIntOption.filter(_ >= 0).getOrElse(throw new IllegalArgumentException(s"$CommitRetries must be a non-negative integer, got '$v'"))
    }.getOrElse(20)
    val batchBytes = catalogOptions.get(ReadBatchBytes).map { v =>
      org.apache.spark.network.util.JavaUtils.byteStringAsBytes(v) match {
        case b if b > 0 => b
        case _ => throw new IllegalArgumentException(s"$ReadBatchBytes must be a positive size such as '32m', got '$v'")
      }
    }.getOrElse(sparklance.format.table.FragmentScanner.DefaultBatchBytes)
    CatalogSettings(hadoop, retries, batchBytes)
  }
}
