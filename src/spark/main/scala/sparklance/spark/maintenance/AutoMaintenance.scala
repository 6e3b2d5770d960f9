package sparklance.spark.maintenance

import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.CatalogSettings

/**
 * What runs after a statement commits, in the same job: compaction when the table asks for it
 * (`auto_compact`), folding zone map segments that have piled up ([[ZoneMapFolding]]), then
 * Lance's automatic cleanup when its config asks for it. None of them ever fails the statement.
 */
object AutoMaintenance {
  /** After a statement that read `read` committed version `committed`; `compact`: whether auto compaction applies. */
  def afterCommit(dataset: Dataset, tableName: String, settings: CatalogSettings, read: Snapshot, committed: Long,
      compact: Boolean = true): Unit = {
    val compaction = if (compact) AutoCompaction.afterCommit(dataset, tableName, settings) else None
    val folds = ZoneMapFolding.run(dataset, tableName, settings, ZoneMapFolding.AfterWrite)
    AutoCleanup.afterCommits(dataset, tableName, read.config,
      (read.version -> committed) +: (compaction.toSeq.flatMap(r => r.version.map(r.readVersion -> _)) ++ folds))
  }
}
