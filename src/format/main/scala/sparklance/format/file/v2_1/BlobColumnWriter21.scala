package sparklance.format.file.v2_1

import org.apache.arrow.vector.{BaseLargeVariableWidthVector, BaseVariableWidthVector, FieldVector}
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.file.{BlobLocation, BlobSidecars, ContainerWriter, TypedAny}
import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, PageLayout, RepDefLayer, VariablePackedStruct}
import sparklance.format.proto.File2Protos.ColumnMetadata
import sparklance.format.table.LanceField

/**
 * The one column of a 2.2 blob v2 field (LANCE-FILE-2.1-2.2.md §8, observed in pylance 14): each
 * value's bytes are stored apart, by size as pylance does (up to 64 KiB inline in this data file,
 * up to 4 MiB appended to the packed sidecar, larger ones in a dedicated sidecar each), and the
 * column's pages hold one descriptor per row: a full-zip page of a variable packed struct of kind
 * (u8), position (u64), size (u64), blob id (u32) and URI (always empty here).
 */
private[v2_1] final class BlobColumnWriter21(field: LanceField, sidecars: BlobSidecars) extends ColumnWriter21 {
  private val pending = ArrayBuffer.empty[Array[Byte]] // null = NULL
  private val pages = ArrayBuffer.empty[ColumnMetadata.Page]
  private var rowsWritten = 0L

  def append(top: FieldVector, from: Int, n: Int): Unit = {
    var i = from
    while (i < from + n) {
      pending += (if (top.isNull(i)) null else top match {
        case v: BaseLargeVariableWidthVector => v.get(i)
        case v: BaseVariableWidthVector => v.get(i)
        case other => throw new IllegalArgumentException(s"Blob column '${field.name}' got a ${other.getClass.getSimpleName}")
      })
      i += 1
    }
  }

  def flush(out: ContainerWriter): Unit = if (pending.nonEmpty) {
    val n = pending.size
    val anyNull = pending.contains(null)
    val payloads = new ValueSink.Variable(large = false)
    val defs = if (anyNull) new Array[Int](n) else null
    var i = 0
    while (i < n) {
      val value = pending(i)
      if (value == null) { defs(i) = 1; payloads.placeholder() }
      else payloads.appendBytes(BlobColumnWriter21.descriptor(value, out, sidecars))
      i += 1
    }
    val layer = if (anyNull) RepDefLayer.REPDEF_NULLABLE_ITEM else RepDefLayer.REPDEF_ALL_VALID_ITEM
    val span = new PageSpan(n, null, defs, n, IndexedSeq(layer), 0, if (anyNull) 1 else 0, if (anyNull) 1 else 0, payloads, 0, n)
    val encoded = FullZipEncoder.encode(span, field.name)
    val zip = encoded.layout.getFullZipLayout.toBuilder.setValueCompression(BlobColumnWriter21.DescriptorEncoding)
    val b = ColumnMetadata.Page.newBuilder()
    encoded.buffers.foreach { buf =>
      b.addBufferOffsets(out.writeBuffer(buf.array, 0, buf.size))
      b.addBufferSizes(buf.size.toLong)
    }
    b.setLength(n.toLong)
      .setEncoding(TypedAny.direct(PageEncoding.PageLayoutName, PageLayout.newBuilder().setFullZipLayout(zip).build()))
      .setPriority(rowsWritten)
    rowsWritten += n
    pages += b.build()
    pending.clear()
  }

  def metadata: ColumnMetadata = ColumnMetadata.newBuilder()
    .setEncoding(TypedAny.direct(PageEncoding.ColumnEncodingName, PageEncoding.columnValues))
    .addAllPages(pages.asJava).build()
}

private[v2_1] object BlobColumnWriter21 {
  /** Stores `value` where its size says and returns its descriptor's packed bytes. */
  private def descriptor(value: Array[Byte], out: ContainerWriter, sidecars: BlobSidecars): Array[Byte] = {
    val size = value.length.toLong
    val (kind, position, blobId) =
      if (size <= BlobSidecars.MaxInlineBytes)
        (BlobLocation.Kind.Inline, if (size == 0) 0L else out.writeBuffer(value, 0, value.length), 0)
      else if (size <= BlobSidecars.MaxPackedBytes) {
        val (id, at) = sidecars.packed(value)
        (BlobLocation.Kind.Packed, at, id)
      } else (BlobLocation.Kind.Dedicated, 0L, sidecars.dedicated(value))
    val uri = Array.emptyByteArray
    val d = new Array[Byte](25 + uri.length)
    d(0) = kind
    Bytes.putN(d, 1, 8, position)
    Bytes.putN(d, 9, 8, size)
    Bytes.putN(d, 17, 4, blobId.toLong)
    Bytes.putN(d, 21, 4, uri.length.toLong)
    System.arraycopy(uri, 0, d, 25, uri.length)
    d
  }

  private def fixed(bits: Int) = VariablePackedStruct.FieldEncoding.newBuilder()
    .setValue(PageEncoding.flat(bits)).setBitsPerValue(bits.toLong).build()

  /** What pylance declares for the descriptor struct's values. */
  val DescriptorEncoding: CompressiveEncoding = CompressiveEncoding.newBuilder().setVariablePackedStruct(
    VariablePackedStruct.newBuilder()
      .addFields(fixed(8)).addFields(fixed(64)).addFields(fixed(64)).addFields(fixed(32))
      .addFields(VariablePackedStruct.FieldEncoding.newBuilder().setValue(PageEncoding.variable(32)).setBitsPerLength(32))).build()
}
