package sparklance.format.commit

import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.proto.TransactionProtos.Transaction

/**
 * An idempotent writer's transaction number, carried by the commit that applies it: application
 * `appId` (a streaming query's id, or a user's `txnAppId`) at its transaction `version` (the
 * micro-batch id, or `txnVersion`). A writer skips a transaction when the table already holds
 * one of the same application at that version or later (Delta's SetTransaction semantics).
 *
 * Recorded twice: in the transaction's properties (read back with the commit, by pylance too), and
 * as a watermark in the manifest's table metadata, which every Lance commit copies from the
 * version before, so that the newest marker of an application stays readable in O(1) and
 * survives the cleanup of old versions and their transaction files.
 */
final case class TxnMarker(appId: String, version: Long, kind: TxnMarker.Kind) {
  require(appId.nonEmpty, "an application id is not empty")
  require(version >= 0, s"a transaction version is not negative, got $version")

  def properties: Map[String, String] =
    Map(TxnMarker.AppIdKey -> appId, TxnMarker.VersionKey -> version.toString, TxnMarker.KindKey -> kind.name)

  /** The table metadata entry of the manifest that lands as `tableVersion`. */
  def watermark(tableVersion: Long, epochMillis: Long): (String, String) =
    TxnMarker.watermarkKey(appId) -> s"$version@$tableVersion@$epochMillis"

  /** Whether a commit of transaction `applied` of the same application makes this one a duplicate. */
  def coveredBy(applied: Long): Boolean = applied >= version
}

object TxnMarker {
  val AppIdKey = "sparklance.txn.app_id"
  val VersionKey = "sparklance.txn.version"
  val KindKey = "sparklance.txn.kind"
  val WatermarkPrefix = "sparklance.txn."

  def watermarkKey(appId: String): String = WatermarkPrefix + "app." + appId

  /** Who records the marker. */
  sealed abstract class Kind(val name: String)
  object Kind {
    /** A micro-batch of a streaming query: app id = the query's persistent id, version = batch id. */
    case object Stream extends Kind("stream")
    /** A batch write or DML statement given `txnAppId` / `txnVersion`. */
    case object Write extends Kind("write")
  }

  /** The transaction version of `appId` a commit's transaction records, if it records one. */
  def versionIn(txn: Transaction, appId: String): Option[Long] = {
    val props = txn.getTransactionPropertiesMap
    if (props.get(AppIdKey) != appId) None else Option(props.get(VersionKey)).flatMap(_.toLongOption)
  }

  /** The transaction version of `appId` the manifest's watermark names, if it has one. */
  def watermarkIn(manifest: Manifest, appId: String): Option[Long] =
    Option(manifest.getTableMetadataMap.get(watermarkKey(appId))).flatMap(_.takeWhile(_ != '@').toLongOption)
}
