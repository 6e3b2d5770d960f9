package sparklance.spark.streaming

import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, ReadLimit, SupportsTriggerAvailableNow}
import sparklance.format.TableNotFoundException
import sparklance.format.table.Dataset
import sparklance.spark.errors.LanceErrors

/**
 * What the streams of a Lance table's versions share (the append stream and the change-data
 * stream): offsets are [[LanceSourceOffset]]s, a batch's limit comes from the options,
 * `Trigger.AvailableNow` pins the latest version when the query starts, and the latest version
 * seen is the query's progress.
 */
trait LanceVersionStream extends MicroBatchStream with SupportsTriggerAvailableNow {
  protected def dataset: Dataset
  protected def sourceOptions: LanceSourceOptions

  /** The latest version when `Trigger.AvailableNow` started the query: the stream stops there. */
  @volatile private var pinned: Option[Long] = None
  /** The latest version the last [[lastReadable]] saw, for the query's progress (`latestOffset` there). */
  @volatile private var latestSeen: Option[Long] = None

  override def deserializeOffset(json: String): Offset = LanceSourceOffset.fromJson(json)

  protected def offset(o: Offset): LanceSourceOffset = o match {
    case l: LanceSourceOffset => l
    case other => LanceSourceOffset.fromJson(other.json())
  }

  override def getDefaultReadLimit: ReadLimit = sourceOptions.readLimit

  override def prepareForTriggerAvailableNow(): Unit = LanceErrors.converting {
    pinned = Some(dataset.latestVersion)
  }

  override def reportLatestOffset(): Offset = latestSeen.map(v => LanceSourceOffset.startOf(v + 1)).orNull

  override def latestOffset(): Offset =
    throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is the one a Lance stream answers")

  /** The last version the next batch may read, in `listing` (the table's versions now). */
  protected def lastReadable(listing: Dataset#Listing): Long = {
    // A table dropped under the query (its files moved to the trash, or kept with a marker) ends it.
    if (listing.versions.isEmpty || listing.dropped) throw new TableNotFoundException(dataset.path)
    val last = pinned.getOrElse(listing.versions.last)
    latestSeen = Some(last)
    last
  }
}
