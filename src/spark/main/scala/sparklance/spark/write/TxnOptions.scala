package sparklance.spark.write

import org.apache.spark.sql.internal.SQLConf
import sparklance.format.InvalidOptionException
import sparklance.format.commit.TxnMarker

/**
 * An idempotent write's application id and transaction version, Delta's names: the write options
 * `txnAppId` / `txnVersion` of an append or overwrite, else the session settings
 * `spark.sparklance.txnAppId` / `spark.sparklance.txnVersion` (which also reach MERGE, UPDATE and
 * DELETE, statements without options, e.g. inside `foreachBatch`). The write is skipped when the
 * table already holds a commit of that application at that version or later.
 */
object TxnOptions {
  val AppId = "txnAppId"
  val Version = "txnVersion"
  val SessionAppId = "spark.sparklance.txnAppId"
  val SessionVersion = "spark.sparklance.txnVersion"

  /** From a write's options (keys in any case), else from the session's settings. */
  def of(options: Map[String, String]): Option[TxnMarker] = {
    val lower = options.map { case (k, v) => k.toLowerCase -> v }
    pair(AppId, lower.get(AppId.toLowerCase), Version, lower.get(Version.toLowerCase)).orElse(ofSession)
  }

  /** From the session's settings only. */
  def ofSession: Option[TxnMarker] = {
    val conf = SQLConf.get
    pair(SessionAppId, Option(conf.getConfString(SessionAppId, null)), SessionVersion, Option(conf.getConfString(SessionVersion, null)))
  }

  private def pair(appKey: String, app: Option[String], versionKey: String, version: Option[String]): Option[TxnMarker] =
    (app.map(_.trim).filter(_.nonEmpty), version) match {
      case (None, None) => None
      case (Some(_), None) => throw new InvalidOptionException(versionKey, s"is required with $appKey (both or neither)")
      case (None, Some(_)) => throw new InvalidOptionException(appKey, s"is required with $versionKey (both or neither)")
      case (Some(a), Some(v)) =>
        val n = v.trim.toLongOption.filter(_ >= 0)
          .getOrElse(throw new InvalidOptionException(versionKey, s"must be a non-negative integer, got '$v'"))
        Some(TxnMarker(a, n, TxnMarker.Kind.Write))
    }
}
