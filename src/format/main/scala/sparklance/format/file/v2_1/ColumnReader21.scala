package sparklance.format.file.v2_1

import com.google.protobuf.InvalidProtocolBufferException
import scala.jdk.CollectionConverters._
import sparklance.format.file.{ContainerReader, TypedAny}
import sparklance.format.proto.Encodings21Protos.PageLayout
import sparklance.format.proto.Encodings21Protos.PageLayout.LayoutCase

/** A run of one decoded page: level entries `[levelFrom, levelTo)` and slots `[slotFrom, slotTo)`. */
private[v2_1] final case class Segment(page: PageData, levelFrom: Int, levelTo: Int, slotFrom: Int, slotTo: Int)

/**
 * The pages of one leaf column. Pages are decoded whole, on demand, and the last two decoded pages
 * are kept, so that consecutive increasing row ranges decode each page once.
 */
private[v2_1] final class ColumnReader21(container: ContainerReader, val index: Int, fieldName: String) {
  private val path = container.path
  private val meta = container.columns(index)
  private val pages = meta.getPagesList.asScala.toIndexedSeq
  private val rowStarts: Array[Long] = pages.scanLeft(0L)(_ + _.getLength).toArray
  private val cache = new java.util.LinkedHashMap[Integer, PageData]()

  def numRows: Long = rowStarts.last

  private def ctx(p: Int) = Ctx(path, s"column $index ('$fieldName') page $p")

  private def page(p: Int, kind: LeafKind): PageData = {
    val hit = cache.remove(p)
    val data = if (hit != null) hit else decode(p, kind)
    cache.put(p, data)
    if (cache.size > 2) cache.remove(cache.keySet.iterator.next)
    data
  }

  private def decode(p: Int, kind: LeafKind): PageData = {
    val c = ctx(p)
    val pg = pages(p)
    val rows = pg.getLength
    if (rows < 0 || rows > Int.MaxValue) throw c.corrupt(s"page of $rows rows")
    val n = pg.getBufferOffsetsCount
    if (pg.getBufferSizesCount != n) throw c.corrupt(s"$n buffer offsets but ${pg.getBufferSizesCount} sizes")
    val offsets = (0 until n).map(pg.getBufferOffsets)
    val sizes = (0 until n).map(pg.getBufferSizes)
    (0 until n).foreach(i => container.checkRange(offsets(i), sizes(i), s"${c.where} buffer $i"))
    val bufs: IndexedSeq[Slice] =
      if (n == 0) IndexedSeq.empty
      else {
        val start = offsets.min
        val end = offsets.zip(sizes).map { case (o, s) => o + s }.max
        if (end - start <= 2 * sizes.sum + 4096 && end - start < Int.MaxValue - 16) {
          val all = container.read(start, end - start, s"${c.where} buffers")
          offsets.zip(sizes).map { case (o, s) => Slice(all, (o - start).toInt, s.toInt) }
        } else offsets.zip(sizes).zipWithIndex.map { case ((o, s), i) => Slice.of(container.read(o, s, s"${c.where} buffer $i")) }
      }
    val bytes = TypedAny.unpackDirect(pg.getEncoding, "lance.encodings21.PageLayout", path, c.where)
    val layout =
      try PageLayout.parseFrom(bytes)
      catch { case e: InvalidProtocolBufferException => throw new sparklance.format.CorruptFileException(path, s"${c.where}: malformed page layout", e) }
    layout.getLayoutCase match {
      case LayoutCase.MINI_BLOCK_LAYOUT => MiniBlockPage.decode(layout.getMiniBlockLayout, bufs, rows.toInt, c)
      case LayoutCase.FULL_ZIP_LAYOUT => FullZipPage.decode(layout.getFullZipLayout, bufs, rows.toInt, c)
      case LayoutCase.CONSTANT_LAYOUT => ConstantPage.decode(layout.getConstantLayout, bufs, rows.toInt, kind, c)
      // Blob descriptors (position, size), whose bytes are elsewhere in the file: the inner layout
      // holds them, one per row (see FileReader21.blobDescriptors).
      case LayoutCase.BLOB_LAYOUT =>
        val inner = layout.getBlobLayout.getInnerLayout
        if (inner.getLayoutCase != LayoutCase.MINI_BLOCK_LAYOUT) throw c.unsupported(s"a blob layout over ${inner.getLayoutCase}")
        MiniBlockPage.decode(inner.getMiniBlockLayout, bufs, rows.toInt, c)
      case LayoutCase.SPARSE_LAYOUT => throw c.unsupported("the sparse page layout (Lance 2.3)")
      case _ => throw c.unsupported("an unknown page layout")
    }
  }

  /** The page runs covering rows `[start, start + n)`. */
  def segments(start: Long, n: Int, kind: LeafKind): Seq[Segment] = {
    if (start + n > numRows)
      throw new sparklance.format.CorruptFileException(path, s"column $index ('$fieldName') has $numRows rows, ${start + n} needed")
    val out = Seq.newBuilder[Segment]
    var row = start
    val end = start + n
    var p = java.util.Arrays.binarySearch(rowStarts, start) match { case i if i >= 0 => i; case i => -i - 2 }
    while (row < end) {
      while (p < pages.size && rowStarts(p + 1) <= row) p += 1
      val d = page(p, kind)
      val from = (row - rowStarts(p)).toInt
      val to = (math.min(end, rowStarts(p + 1)) - rowStarts(p)).toInt
      if (d.rows != pages(p).getLength) throw ctx(p).corrupt("row count mismatch")
      out += Segment(d, d.levelOfRow(from), d.levelOfRow(to), d.slotOfRow(from), d.slotOfRow(to))
      row = rowStarts(p) + to
      p += 1
    }
    out.result()
  }
}
