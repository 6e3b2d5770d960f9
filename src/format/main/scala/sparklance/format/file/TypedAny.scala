package sparklance.format.file

import com.google.protobuf.{ByteString, InvalidProtocolBufferException, MessageLite}
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.File2Protos

/**
 * The `google.protobuf.Any` wrapping of page and column encodings. pylance writes the type URL as
 * "/" + message name with no host, and `Any.pack` would add one, so the Any is built by hand.
 */
object TypedAny {
  def pack(messageName: String, value: MessageLite): ByteString =
    com.google.protobuf.Any.newBuilder().setTypeUrl("/" + messageName).setValue(value.toByteString).build().toByteString

  /** `value` as a direct `Encoding` (ColumnMetadata.encoding and Page.encoding). */
  def direct(messageName: String, value: MessageLite): File2Protos.Encoding =
    File2Protos.Encoding.newBuilder()
      .setDirect(File2Protos.DirectEncoding.newBuilder().setEncoding(pack(messageName, value))).build()

  /**
   * The serialized message inside a direct `Encoding`, checked to be a `messageName`. A type URL
   * with a host prefix is accepted, as pylance does.
   */
  def unpackDirect(encoding: File2Protos.Encoding, messageName: String, path: String, where: => String): ByteString = {
    encoding.getLocationCase match {
      case File2Protos.Encoding.LocationCase.DIRECT =>
      case File2Protos.Encoding.LocationCase.INDIRECT =>
        throw new UnsupportedFeatureException(s"$where of $path uses an indirect (deferred) encoding, which is not supported")
      case _ => throw new CorruptFileException(path, s"$where has no encoding")
    }
    val any =
      try com.google.protobuf.Any.parseFrom(encoding.getDirect.getEncoding)
      catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, s"$where: malformed encoding", e) }
    val url = any.getTypeUrl
    if (!url.endsWith("/" + messageName))
      throw new CorruptFileException(path, s"$where: expected an encoding of type /$messageName, found type URL '$url'")
    any.getValue
  }
}
