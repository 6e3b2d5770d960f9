package sparklance.format.file.v2_0

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.file.{ContainerWriter, TypedAny}
import sparklance.format.proto.Encodings20Protos.ArrayEncoding
import sparklance.format.proto.File2Protos.ColumnMetadata

/** The pages written so far for one file column; page buffers go to the file right away. */
private[v2_0] final class ColumnPages {
  private val pages = ArrayBuffer.empty[ColumnMetadata.Page]

  def write(out: ContainerWriter, buffers: Seq[PageBuffer], length: Long, encoding: ArrayEncoding): Unit = {
    val page = ColumnMetadata.Page.newBuilder().setLength(length)
      .setEncoding(TypedAny.direct(ArrayEncodings.ArrayEncodingName, encoding))
    buffers.foreach { b =>
      page.addBufferOffsets(out.writeBuffer(b.array, 0, b.length)).addBufferSizes(b.length.toLong)
    }
    pages += page.build()
  }

  def metadata: ColumnMetadata = ColumnMetadata.newBuilder()
    .setEncoding(TypedAny.direct(ArrayEncodings.ColumnEncodingName, ArrayEncodings.columnValues))
    .addAllPages(pages.asJava).build()
}
