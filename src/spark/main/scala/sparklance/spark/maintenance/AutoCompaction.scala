package sparklance.spark.maintenance

import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory
import scala.util.control.NonFatal
import sparklance.format.maintenance.{Compaction, CompactionOptions, CompactionResult}
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.layout.Clustering
import sparklance.spark.{CatalogSettings, TableProperties}
import sparklance.spark.indexing.ZoneMapMaintenance

/**
 * Compaction right after a write, when the table asks for it (`auto_compact` = true): once the
 * fragments a compaction would rewrite (small ones, and ones with too many deleted rows) number
 * `auto_compact.min_fragments` or more, the same job compacts them as a separate version, with
 * the table's `lance.compaction.*` options. The user's statement has committed by then: a
 * compaction that fails or loses a race is logged and never fails it.
 */
object AutoCompaction {
  private val log = LoggerFactory.getLogger(getClass)

  def enabled(config: Map[String, String]): Boolean = TableProperties.AutoCompact.of(config)

  /**
   * After a commit, `latest` being the table's newest version. `byDefault`: whether it runs on a
   * table that does not set `auto_compact` (a streaming sink's batches: see [[AutoMaintenance]]).
   */
  def afterCommit(dataset: Dataset, tableName: String, settings: CatalogSettings, latest: Snapshot,
      byDefault: Boolean = false): Option[CompactionResult] =
    try {
      val set = TableProperties.AutoCompact.configKey.exists(latest.config.contains)
      if (!(if (set) enabled(latest.config) else byDefault)) None
      else {
        val options = CompactionOptions.resolve(Map.empty, latest.config)
        val spark = SparkSession.active
        val compaction = new Compaction(dataset, DistributedCompaction.runner(spark, tableName, settings, Clustering.layout(latest.config)),
          indexing = ZoneMapMaintenance.forCompaction(tableName, dataset))
        val rewritten = compaction.plan(options).tasks.map(_.fragments.size).sum
        val threshold = TableProperties.AutoCompactMinFragments.of(latest.config)
        if (rewritten < threshold) None
        else {
          val result = compaction.run(options)
          log.info(s"auto_compact of $tableName: $result")
          Some(result)
        }
      }
    } catch {
      case NonFatal(e) =>
        log.warn(s"auto_compact of $tableName did not run to the end; the statement itself committed", e)
        None
    }
}
