package sparklance.format.commit

import java.util.concurrent.ConcurrentHashMap
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.table.{Dataset, Snapshot}

/**
 * The newest transaction version an idempotent writer's application committed to a table (see
 * [[TxnMarker]]). First the latest manifest's watermark; without one (a table whose metadata a
 * foreign writer replaced), the transactions, read back from the latest version until one of the
 * application is found. Versions whose manifest or transaction file cleanup removed are not seen:
 * only the watermark protects against that. The walk remembers, per table and application, how
 * far it has read, so that a stream's later batches read only the versions committed since.
 */
object AppTxnLookup {
  /** The walk read every version up to `upTo` (whose manifest has `stamp`) and found `found`. */
  private final case class Seen(upTo: Long, stamp: com.google.protobuf.Timestamp, found: Option[Long])
  private val seen = new ConcurrentHashMap[(String, String), Seen]()

  /** The newest transaction version of `appId` in `latest` (the latest snapshot of `dataset`) and before it. */
  def lastVersion(dataset: Dataset, appId: String, latest: Snapshot): Option[Long] =
    TxnMarker.watermarkIn(latest.manifest, appId).orElse {
      val key = (dataset.path, appId)
      val listing = dataset.listing()
      def committed(v: Long): Option[VersionLookup.Committed] = Transactions.lookup(dataset, v, listing) match {
        case c: VersionLookup.Committed => Some(c)
        case _ => None
      }
      // What the walk saw holds while its last version is still there, the same manifest (not a
      // table dropped and created again at the path).
      val before = Option(seen.get(key)).filter(s => s.upTo <= latest.version &&
        (if (s.upTo == latest.version) latest.manifest.getTimestamp == s.stamp
         else listing.versions.contains(s.upTo) && committed(s.upTo).exists(_.snapshot.manifest.getTimestamp == s.stamp)))
      val from = before.fold(0L)(_.upTo)
      val found = listing.versions.reverseIterator.dropWhile(_ > latest.version).takeWhile(_ > from)
        .flatMap(v => committed(v).flatMap(_.transaction).flatMap(TxnMarker.versionIn(_, appId))).nextOption()
        .orElse(before.flatMap(_.found))
      seen.put(key, Seen(latest.version, latest.manifest.getTimestamp, found))
      found
    }

  /** Throws TxnAlreadyAppliedException when `marker`'s transaction (or a later one of its application) is in `latest`. */
  def requireNew(dataset: Dataset, marker: TxnMarker, latest: Snapshot): Unit =
    lastVersion(dataset, marker.appId, latest).filter(marker.coveredBy).foreach { applied =>
      throw new TxnAlreadyAppliedException(dataset.path, marker.appId, marker.version, latest.version, applied)
    }
}
