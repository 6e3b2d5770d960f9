package sparklance.format.table

/**
 * How pylance stores a blob column (a binary column whose values live outside the column's
 * pages; pylance's `take_blobs` opens them as files). Its pages hold one descriptor per row:
 *  - V1, file formats 2.0 and 2.1 (field metadata `lance-encoding:blob` = true on a binary field):
 *    the value's absolute position and size in the same data file;
 *  - V2, file format 2.2 (pylance turns the same metadata into the extension type `lance.blob.v2`,
 *    a struct of `data` and `uri` in the schema): a kind, position, size, blob id and URI, the bytes
 *    being in the data file (inline), in a shared or a dedicated sidecar file next to it (packed,
 *    dedicated), or outside the table (external).
 */
sealed abstract class BlobEncoding(val version: Int)

object BlobEncoding {
  case object V1 extends BlobEncoding(1)
  case object V2 extends BlobEncoding(2)

  /** The field metadata that asks for a blob column (pylance's, and sparklance's column metadata). */
  val MetadataKey = "lance-encoding:blob"
  /** Arrow's field metadata naming an extension type. */
  val ExtensionKey = "ARROW:extension:name"
  val V2ExtensionName = "lance.blob.v2"

  /**
   * A new blob v2 column as pylance's schema holds it: a struct of `data` (large binary) and `uri`
   * (string) naming the extension type; its values are binary.
   */
  def v2Field(name: String, nullable: Boolean, metadata: Map[String, String]): org.apache.arrow.vector.types.pojo.Field = {
    import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType}
    val md = new java.util.HashMap[String, String]()
    metadata.foreach { case (k, v) => md.put(k, v) }
    md.put(ExtensionKey, V2ExtensionName)
    new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null, md), java.util.List.of(
      new Field("data", FieldType.nullable(ArrowType.LargeBinary.INSTANCE), java.util.List.of[Field]()),
      new Field("uri", FieldType.nullable(ArrowType.Utf8.INSTANCE), java.util.List.of[Field]())))
  }
}
