package sparklance.spark.scan

/**
 * Rows of a fragment one commit changed (portable Roaring bytes of physical offsets), and which
 * of them are images of an update; with the commit's version and time (microseconds).
 */
final case class ChangeSlice(rows: Array[Byte], updated: Array[Byte], newSide: Boolean, commitVersion: Long,
    commitMicros: Long, computeUpdates: Boolean) {
  def changeType(updateImage: Boolean): String = (newSide, updateImage && computeUpdates) match {
    case (true, true) => "update_postimage"
    case (true, false) => "insert"
    case (false, true) => "update_preimage"
    case (false, false) => "delete"
  }
}
