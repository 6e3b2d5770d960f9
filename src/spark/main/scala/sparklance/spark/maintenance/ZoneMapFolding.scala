package sparklance.spark.maintenance

import org.slf4j.LoggerFactory
import scala.util.control.NonFatal
import sparklance.format.commit.Statement
import sparklance.format.skipping.ZoneMapFold
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.CatalogSettings

/**
 * Folds a table's zone map indices whose segments have piled up (see [[ZoneMapFold]]): after a
 * write, those with [[ZoneMapFolding.AfterWrite]] segments or more; after `compact`, every one
 * with several. All the indices folded at once are one version. A fold that fails or loses a
 * race is logged; the write or compaction before it has committed and stands.
 */
object ZoneMapFolding {
  /**
   * Segments of one zone map at which a write folds them: a write's own segment folds the others
   * into it in its version (ZoneMapAppend); the fold after a write catches zone maps other writers
   * (pylance, create_index) piled up.
   */
  val AfterWrite = 16

  private val log = LoggerFactory.getLogger(getClass)

  /**
   * The version the fold committed, as (read version, committed version); `latest` is the table's
   * newest version; `statement` the one the fold is recorded as (the write's fold, or COMPACT's).
   */
  def run(dataset: Dataset, tableName: String, settings: CatalogSettings, atLeast: Int, latest: => Snapshot,
      statement: Statement = Statement.FoldZoneMaps): Seq[(Long, Long)] =
    try {
      val names = ZoneMapFold.candidates(latest, atLeast)
      if (names.isEmpty) Nil
      else {
        val read = dataset.snapshot(forWrite = true)
        ZoneMapFold.fold(dataset, read, names, settings.commitRetries, statement).map { folded =>
          log.info(s"Folded the segments of zone maps ${folded.segments.toSeq.sorted.map { case (n, s) => s"$n ($s)" }.mkString(", ")} " +
            s"of $tableName into one each (version ${folded.version})")
          read.version -> folded.version
        }.toSeq
      }
    } catch {
      case NonFatal(e) =>
        log.warn(s"Folding the zone map segments of $tableName did not run to the end; what committed before stands", e)
        Nil
    }
}
