package sparklance.spark.maintenance

import sparklance.format.table.Dataset
import sparklance.spark.CatalogSettings

/**
 * What runs after a statement commits, in the same job: compaction when the table asks for it
 * (`auto_compact`), then Lance's automatic cleanup when its config asks for it. Neither ever
 * fails the statement.
 */
object AutoMaintenance {
  /** After a statement that read version `read` committed `committed`; `compact`: whether auto compaction applies. */
  def afterCommit(dataset: Dataset, tableName: String, settings: CatalogSettings, read: Long, committed: Long,
      compact: Boolean = true): Unit = {
    val compaction = if (compact) AutoCompaction.afterCommit(dataset, tableName, settings) else None
    AutoCleanup.afterCommits(dataset, tableName,
      (read -> committed) +: compaction.toSeq.flatMap(r => r.version.map(r.readVersion -> _)))
  }
}
