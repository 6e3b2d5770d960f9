package sparklance.spark.maintenance

import org.slf4j.LoggerFactory
import scala.util.control.NonFatal
import sparklance.format.skipping.ZoneMapFold
import sparklance.format.table.{Dataset, Snapshot}
import sparklance.spark.CatalogSettings

/**
 * Folds a table's zone map indices whose segments have piled up (see [[ZoneMapFold]]): after a
 * write, those with [[ZoneMapFolding.AfterWrite]] segments or more; after `compact`, every one
 * with several. Each fold is its own version. A fold that fails or loses a race is logged; the
 * write or compaction before it has committed and stands.
 */
object ZoneMapFolding {
  /** Segments of one zone map that make a write fold them: one per write on a `zonemap_columns` column. */
  val AfterWrite = 16

  private val log = LoggerFactory.getLogger(getClass)

  /** The versions the folds committed, as (read version, committed version); `latest` is the table's newest version. */
  def run(dataset: Dataset, tableName: String, settings: CatalogSettings, atLeast: Int, latest: => Snapshot): Seq[(Long, Long)] =
    try {
      ZoneMapFold.candidates(latest, atLeast).flatMap { name =>
        val read = dataset.snapshot(forWrite = true)
        ZoneMapFold.fold(dataset, read, name, settings.commitRetries).map { folded =>
          log.info(s"Folded ${folded.segments} segments of zone map ${folded.name} of $tableName into one (version ${folded.version})")
          read.version -> folded.version
        }
      }
    } catch {
      case NonFatal(e) =>
        log.warn(s"Folding the zone map segments of $tableName did not run to the end; what committed before stands", e)
        Nil
    }
}
