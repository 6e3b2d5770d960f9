package sparklance.spark.scan

/**
 * Rows of a fragment one commit changed (portable Roaring bytes of physical offsets), and which
 * of them are images of an update; with the commit's version and time (microseconds). `fields`:
 * the Lance fields (as [[ReadTarget.encode]] gives them) that read the fragment as the version
 * holding the rows stored it, where its schema differs from the one the scan serves.
 */
final case class ChangeSlice(rows: Array[Byte], updated: Array[Byte], newSide: Boolean, commitVersion: Long,
    commitMicros: Long, computeUpdates: Boolean, fields: Option[Array[Array[Byte]]] = None) {
  def changeType(updateImage: Boolean): String = (newSide, updateImage && computeUpdates) match {
    case (true, true) => "update_postimage"
    case (true, false) => "insert"
    case (false, true) => "update_preimage"
    case (false, false) => "delete"
  }
}
