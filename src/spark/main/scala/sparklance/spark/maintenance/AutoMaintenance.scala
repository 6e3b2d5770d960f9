package sparklance.spark.maintenance

import org.slf4j.LoggerFactory
import scala.util.control.NonFatal
import sparklance.format.commit.CommitResult
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.CatalogSettings

/**
 * What runs after a statement commits, in the same job: compaction when the table asks for it
 * (`auto_compact`), folding zone map segments that have piled up ([[ZoneMapFolding]]), then
 * Lance's automatic cleanup when its config asks for it. None of them ever fails the statement.
 */
object AutoMaintenance {
  private val log = LoggerFactory.getLogger(getClass)

  /**
   * After a statement that read `read` committed `committed`; `compact`: whether auto
   * compaction applies, `compactByDefault`: whether it runs on a table that does not set
   * `auto_compact`. A streaming sink's batches pass true: a stream of small batches adds a
   * fragment per batch and task (200 batches of 100 rows left 200 fragments), and compaction
   * every `auto_compact.min_fragments` batches keeps them few (4 after the same 200 batches,
   * at the same rows per second); `auto_compact` = false on the table still turns it off.
   */
  def afterCommit(dataset: Dataset, tableName: String, settings: CatalogSettings, read: Snapshot, committed: CommitResult,
      compact: Boolean = true, compactByDefault: Boolean = false): Unit = {
    // One look at the table serves compaction and folding, unless compaction commits in between.
    // While the version committed is the latest, its manifest is not read and decoded again (a GET
    // on S3); where the commit's own listing, just after its put, found no newer version, the
    // versions are not listed again either (a LIST on S3, one after the other with the commit's).
    val latest = if (committed.newest) Some(committed.snapshot) else try Some(dataset.latest(committed.snapshot)) catch {
      case NonFatal(e) => log.warn(s"Maintenance of $tableName after version ${committed.version} skipped; the statement committed", e); None
    }
    val compaction = latest.filter(_ => compact).flatMap(AutoCompaction.afterCommit(dataset, tableName, settings, _, compactByDefault))
    val compacted = compaction.flatMap(r => r.version.map(r.readVersion -> _))
    val folds = latest.toSeq.flatMap { before =>
      ZoneMapFolding.run(dataset, tableName, settings, ZoneMapFolding.AfterWrite,
        if (compacted.isEmpty) before else dataset.snapshot())
    }
    AutoCleanup.afterCommits(dataset, tableName, read.config, (read.version -> committed.version) +: (compacted.toSeq ++ folds))
  }
}
