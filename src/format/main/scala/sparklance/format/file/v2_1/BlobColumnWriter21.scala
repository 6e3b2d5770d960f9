package sparklance.format.file.v2_1

import org.apache.arrow.vector.{BaseLargeVariableWidthVector, BaseVariableWidthVector, FieldVector}
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.file.{BlobLocation, BlobSidecars, ContainerWriter, TypedAny}
import sparklance.format.proto.Encodings21Protos.{BlobLayout, CompressiveEncoding, PageLayout, RepDefLayer, VariablePackedStruct}
import sparklance.format.proto.File2Protos.ColumnMetadata
import sparklance.format.table.LanceField

/**
 * The one column of a blob field: each row's bytes are stored apart and the column's pages hold
 * one descriptor per row; `page` encodes the pending rows' descriptors as the file format has them.
 */
private[v2_1] sealed abstract class BlobColumnWriter(field: LanceField) extends ColumnWriter21 {
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

  /** The page of `values` (null = NULL), whose bytes it stores through `out`. */
  protected def page(values: collection.IndexedSeq[Array[Byte]], out: ContainerWriter): EncodedPage

  def flush(out: ContainerWriter): Unit = if (pending.nonEmpty) {
    val n = pending.size
    val encoded = page(pending, out)
    val b = ColumnMetadata.Page.newBuilder()
    encoded.buffers.foreach { buf =>
      b.addBufferOffsets(out.writeBuffer(buf.array, 0, buf.size))
      b.addBufferSizes(buf.size.toLong)
    }
    b.setLength(n.toLong).setEncoding(TypedAny.direct(PageEncoding.PageLayoutName, encoded.layout)).setPriority(rowsWritten)
    rowsWritten += n
    pages += b.build()
    pending.clear()
  }

  def metadata: ColumnMetadata = ColumnMetadata.newBuilder()
    .setEncoding(TypedAny.direct(PageEncoding.ColumnEncodingName, PageEncoding.columnValues))
    .addAllPages(pages.asJava).build()
}

/**
 * A 2.2 blob v2 column (LANCE-FILE-2.1-2.2.md §8, observed in pylance 14): values are stored by
 * size as pylance does (up to 64 KiB inline in this data file, up to 4 MiB appended to the packed
 * sidecar, larger ones in a dedicated sidecar each), and a full-zip page holds the descriptors,
 * a variable packed struct of kind (u8), position (u64), size (u64), blob id (u32) and URI
 * (always empty here).
 */
private[v2_1] final class BlobColumnWriter21(field: LanceField, sidecars: BlobSidecars) extends BlobColumnWriter(field) {
  protected def page(values: collection.IndexedSeq[Array[Byte]], out: ContainerWriter): EncodedPage = {
    val n = values.size
    val anyNull = values.contains(null)
    val payloads = new ValueSink.Variable(large = false)
    val defs = if (anyNull) new Array[Int](n) else null
    var i = 0
    while (i < n) {
      val value = values(i)
      if (value == null) { defs(i) = 1; payloads.placeholder() }
      else payloads.appendBytes(BlobColumnWriter21.descriptor(value, out, sidecars))
      i += 1
    }
    val layer = if (anyNull) RepDefLayer.REPDEF_NULLABLE_ITEM else RepDefLayer.REPDEF_ALL_VALID_ITEM
    val span = new PageSpan(n, null, defs, n, IndexedSeq(layer), 0, if (anyNull) 1 else 0, if (anyNull) 1 else 0, payloads, 0, n)
    val encoded = FullZipEncoder.encode(span, field.name)
    val zip = encoded.layout.getFullZipLayout.toBuilder.setValueCompression(BlobColumnWriter21.DescriptorEncoding)
    EncodedPage(PageLayout.newBuilder().setFullZipLayout(zip).build(), encoded.buffers)
  }
}

/**
 * A 2.1 blob column (blob v1, `lance-encoding:blob` on a binary field; LANCE-FILE-2.1-2.2.md §8):
 * each non-empty value's bytes are a buffer of this data file, and the page is a blob layout over
 * a mini-block of (position u64, size u64) packed structs, one per row, as pylance writes it: an
 * empty value is (0, 0), a NULL (def 1 << 16, 0), and the blob layout's own layer says whether
 * NULLs occur.
 */
private[v2_1] final class BlobV1ColumnWriter21(field: LanceField, minor: Int) extends BlobColumnWriter(field) {
  protected def page(values: collection.IndexedSeq[Array[Byte]], out: ContainerWriter): EncodedPage = {
    val n = values.size
    val descriptors = new ValueSink.PackedStruct(IndexedSeq(8, 8), field.name)
    val d = new Array[Byte](16)
    values.foreach { value =>
      val (position, size) =
        if (value == null) (1L << 16, 0L)
        else if (value.isEmpty) (0L, 0L)
        else (out.writeBuffer(value, 0, value.length), value.length.toLong)
      Bytes.putN(d, 0, 8, position)
      Bytes.putN(d, 8, 8, size)
      descriptors.appendBytes(d)
    }
    val inner = new PageSpan(n, null, null, n, IndexedSeq(RepDefLayer.REPDEF_ALL_VALID_ITEM), 0, 0, 0, descriptors, 0, n)
    val encoded = MiniBlockEncoder.encode(inner, minor, packing = false).getOrElse(
      throw new IllegalStateException(s"Blob column '${field.name}': descriptors without levels fit no mini-block"))
    val layer = if (values.contains(null)) RepDefLayer.REPDEF_NULLABLE_ITEM else RepDefLayer.REPDEF_ALL_VALID_ITEM
    EncodedPage(PageLayout.newBuilder().setBlobLayout(BlobLayout.newBuilder().setInnerLayout(encoded.layout).addLayers(layer)).build(),
      encoded.buffers)
  }
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
