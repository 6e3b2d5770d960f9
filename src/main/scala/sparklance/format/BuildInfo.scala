package sparklance.format

/** The version this library writes into manifests as writer_version. */
object BuildInfo {
  val version: String = "0.1.0"
}
