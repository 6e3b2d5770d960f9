package sparklance.spark.maintenance

import org.slf4j.LoggerFactory
import scala.util.control.NonFatal
import sparklance.format.maintenance.{Cleanup, CleanupPolicy, CleanupResult}
import sparklance.format.table.Dataset

/**
 * Lance's automatic cleanup, for tables whose config asks for it (`lance.auto_cleanup.interval`,
 * set by pylance's `auto_cleanup_options` or as a table property): after a commit of a version
 * the interval divides, old versions go by the config's filters, as pylance does after its own
 * commits. The commit has landed by then: a cleanup that fails is logged and never fails it.
 */
object AutoCleanup {
  private val log = LoggerFactory.getLogger(getClass)

  /**
   * After `commits` (read version, committed version) of one statement on a table with `config`
   * (as the statement read it: no manifest is read again for tables without automatic cleanup):
   * one cleanup if any is due.
   */
  def afterCommits(dataset: Dataset, tableName: String, config: Map[String, String], commits: Seq[(Long, Long)]): Option[CleanupResult] =
    try {
      commits.iterator.flatMap { case (read, version) => CleanupPolicy.automatic(config, version).map(read -> _) }
        .nextOption().map { case (read, policy) =>
          // Like Lance's hook, which cleans with the dataset its commit read: that version stays too.
          val result = new Cleanup(dataset).run(policy, keepFrom = read)
          log.info(s"lance.auto_cleanup of $tableName removed versions ${result.removedVersions.mkString(", ")}")
          result
        }
    } catch {
      case NonFatal(e) =>
        log.warn(s"lance.auto_cleanup of $tableName did not run to the end; the commit itself landed", e)
        None
    }
}
