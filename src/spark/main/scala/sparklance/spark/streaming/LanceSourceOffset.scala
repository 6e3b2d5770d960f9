package sparklance.spark.streaming

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.connector.read.streaming.Offset
import scala.util.control.NonFatal

/**
 * A position in a Lance table's stream of versions: everything before fragment `index` of version
 * `tableVersion` has been read. `initialSnapshot`: the position is inside the first version's
 * whole fragment list (the rows the table held when the query started), not inside the fragments
 * that version added. After the last fragment of version v the position is (v + 1, 0): a version
 * not committed yet. Spark stores the `json` in the checkpoint's offset log and compares offsets by it.
 */
final case class LanceSourceOffset(tableVersion: Long, index: Long, initialSnapshot: Boolean) extends Offset {
  require(tableVersion >= 0 && index >= 0, s"a stream position has a version and an index >= 0, not $tableVersion, $index")

  override def json(): String =
    s"""{"v":${LanceSourceOffset.FormatVersion},"tableVersion":$tableVersion,"index":$index,"initialSnapshot":$initialSnapshot}"""

  /** Whether this position comes before `other`: by version, then index (within one version both are of the same kind). */
  def before(other: LanceSourceOffset): Boolean =
    tableVersion < other.tableVersion || (tableVersion == other.tableVersion && index < other.index)
}

object LanceSourceOffset {
  /** The version of the json layout; a newer one is refused rather than misread. */
  val FormatVersion = 1

  private lazy val mapper = new ObjectMapper()

  /** The start of version `v`'s added fragments. */
  def startOf(v: Long): LanceSourceOffset = LanceSourceOffset(v, 0, initialSnapshot = false)

  /** Reads what [[LanceSourceOffset.json]] wrote; `where` names the checkpoint file or source for errors. */
  def fromJson(json: String, where: String = "the checkpoint"): LanceSourceOffset = {
    def bad(why: String) = new IllegalStateException(s"Offset '$json' in $where is not a Lance stream offset: $why")
    val node = try mapper.readTree(json) catch { case NonFatal(e) => throw bad(e.getMessage) }
    if (node == null || !node.isObject) throw bad("not a JSON object")
    def field(name: String) = Option(node.get(name)).getOrElse(throw bad(s"no field $name"))
    val format = field("v")
    if (!format.canConvertToLong || format.asLong != FormatVersion)
      throw bad(s"layout version ${format.asText}, this sparklance reads version $FormatVersion (written by a newer sparklance?)")
    val version = field("tableVersion")
    val index = field("index")
    val initial = field("initialSnapshot")
    if (!version.canConvertToLong || !index.canConvertToLong || !initial.isBoolean) throw bad("fields of the wrong type")
    LanceSourceOffset(version.asLong, index.asLong, initial.asBoolean)
  }
}
