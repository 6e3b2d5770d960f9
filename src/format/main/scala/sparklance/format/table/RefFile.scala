package sparklance.format.table

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper, SerializationFeature}
import com.fasterxml.jackson.databind.node.ObjectNode
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.CorruptFileException
import sparklance.format.io.Storage

/**
 * One JSON file under a table's `_refs/` (a tag or a branch), as Lance writes them: a pretty-printed
 * object. pylance 14 writes camelCase keys where older Lance (and Lance's format page) used
 * snake_case, so fields are looked up by any of their names.
 */
private[table] final class RefFile(path: String, kind: String, val json: ObjectNode) {
  def corrupt(detail: String, cause: Throwable = null) = new CorruptFileException(path, s"not a Lance $kind: $detail", cause)

  def field(names: String*): Option[JsonNode] = names.map(json.get).find(n => n != null && !n.isNull)

  def long(names: String*): Option[Long] = field(names: _*).filter(_.canConvertToLong).map(_.asLong())

  def metadata: Map[String, String] =
    field("metadata").map(_.properties().asScala.map(e => e.getKey -> e.getValue.asText()).toMap).getOrElse(Map.empty)
}

private[table] object RefFile {
  val mapper: ObjectMapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)

  def parse(path: String, kind: String, bytes: Array[Byte]): RefFile = {
    def corrupt(detail: String, cause: Throwable = null) = new CorruptFileException(path, s"not a Lance $kind: $detail", cause)
    try mapper.readTree(bytes) match {
      case o: ObjectNode => new RefFile(path, kind, o)
      case _ => throw corrupt("not a JSON object")
    } catch { case e: java.io.IOException => throw corrupt(e.getMessage, e) }
  }

  /** The file's bytes; None when it is not there (never was, or deleted meanwhile). */
  def read(storage: Storage, path: String): Option[Array[Byte]] =
    try Some(storage.readAll(path)) catch { case NonFatal(_) if !storage.exists(path) => None }

  /** A new object with `metadata` under "metadata", for `fill` to add the other keys to first. */
  def encode(metadata: Map[String, String])(fill: ObjectNode => Unit): Array[Byte] = {
    val o = mapper.createObjectNode()
    fill(o)
    val m = o.putObject("metadata")
    metadata.foreach { case (k, v) => m.put(k, v) }
    mapper.writeValueAsBytes(o)
  }
}
