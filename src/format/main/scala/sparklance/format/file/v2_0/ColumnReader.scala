package sparklance.format.file.v2_0

import com.google.protobuf.InvalidProtocolBufferException
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.{ContainerReader, TypedAny}
import org.apache.arrow.memory.ArrowBuf
import sparklance.format.proto.Encodings20Protos.{ArrayEncoding, Buffer, ColumnEncoding}

/** Rows `[from, from + count)` of one decoded page. */
private[v2_0] final case class Segment(page: Int, data: Decoded, from: Int, count: Int)

/**
 * One column of a 2.0 file: where its pages start, their parsed encodings, and the last decoded
 * page. Scans ask for consecutive row ranges, so keeping that one page means each page is read
 * and decoded once.
 */
private[v2_0] final class ColumnReader(container: ContainerReader, val index: Int) {
  private val path = container.path
  private val meta = container.columns(index)
  private def where(page: Int) = s"column $index, page $page"

  locally {
    val bytes = TypedAny.unpackDirect(meta.getEncoding, ArrayEncodings.ColumnEncodingName, path, s"column $index")
    val enc =
      try ColumnEncoding.parseFrom(bytes)
      catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, s"column $index: malformed ColumnEncoding", e) }
    enc.getColumnEncodingCase match {
      case ColumnEncoding.ColumnEncodingCase.VALUES =>
      // A blob column: its pages hold descriptors of bytes stored elsewhere in the file.
      case ColumnEncoding.ColumnEncodingCase.BLOB if enc.getBlob.getInner.hasValues =>
      case ColumnEncoding.ColumnEncodingCase.COLUMNENCODING_NOT_SET =>
        throw new CorruptFileException(path, s"column $index is missing its ColumnEncoding")
      case other => throw new UnsupportedFeatureException(
        s"Column $index of $path uses the column encoding '${other.name.toLowerCase}', which sparklance does not read")
    }
  }

  val numPages: Int = meta.getPagesCount

  /** starts(p) = the first value of page p; starts(numPages) = the column's value count. */
  private val starts: Array[Long] = {
    val s = new Array[Long](numPages + 1)
    for (p <- 0 until numPages) {
      val page = meta.getPages(p)
      if (page.getLength < 0 || page.getLength > Int.MaxValue - 1)
        throw new CorruptFileException(path, s"${where(p)} claims ${java.lang.Long.toUnsignedString(page.getLength)} values")
      if (page.getBufferOffsetsCount != page.getBufferSizesCount)
        throw new CorruptFileException(path, s"${where(p)} has ${page.getBufferOffsetsCount} buffer offsets but ${page.getBufferSizesCount} sizes")
      for (b <- 0 until page.getBufferOffsetsCount)
        container.checkRange(page.getBufferOffsets(b), page.getBufferSizes(b), s"buffer $b of ${where(p)}")
      s(p + 1) = s(p) + page.getLength
    }
    s
  }

  def length: Long = starts(numPages)

  /** The bytes its pages' buffers take in the file. */
  lazy val storedBytes: Long = {
    var total = 0L
    for (p <- 0 until numPages; b <- 0 until meta.getPages(p).getBufferSizesCount) total += meta.getPages(p).getBufferSizes(b)
    total
  }

  private val encodings = new Array[ArrayEncoding](numPages)

  def encoding(p: Int): ArrayEncoding = {
    if (encodings(p) == null) {
      val bytes = TypedAny.unpackDirect(meta.getPages(p).getEncoding, ArrayEncodings.ArrayEncodingName, path, where(p))
      encodings(p) =
        try ArrayEncoding.parseFrom(bytes)
        catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, s"${where(p)}: malformed ArrayEncoding", e) }
    }
    encodings(p)
  }

  def pageLength(p: Int): Int = (starts(p + 1) - starts(p)).toInt

  private var cachedPage = -1
  private var cachedShape: Shape = _
  private var cached: Decoded = _

  def decoded(p: Int, shape: Shape): Decoded = {
    if (p != cachedPage || shape != cachedShape) {
      val buffers = new PageBuffers(container, meta, meta.getPages(p), where(p))
      cached =
        try new PageDecoder(buffers, path, where(p)).decode(encoding(p), pageLength(p), shape)
        catch {
          // Lengths that disagree with the buffers in a way the checks above did not foresee.
          case e @ (_: IndexOutOfBoundsException | _: ArithmeticException | _: NegativeArraySizeException) =>
            throw new CorruptFileException(path, s"${where(p)} cannot be decoded: $e", e)
        }
      cachedPage = p
      cachedShape = shape
    }
    cached
  }

  /** The page holding value `row` (the first non-empty one). */
  private def pageOf(row: Long): Int = {
    var (lo, hi) = (0, numPages - 1) // the last p with starts(p) <= row
    while (lo < hi) {
      val mid = (lo + hi + 1) >>> 1
      if (starts(mid) <= row) lo = mid else hi = mid - 1
    }
    var p = lo
    while (starts(p + 1) <= row) p += 1
    p
  }

  def checkRange(start: Long, n: Long): Unit =
    if (start < 0 || n < 0 || start + n > length)
      throw new CorruptFileException(path, s"column $index has $length values, but values $start until ${start + n} are needed")

  /**
   * The decoded pages covering values `[start, start + n)`, in order; with `maxBytes`, only the
   * first values that take at most that much Arrow memory (one at least), counted as pages are
   * decoded, so that no page is decoded past the one that spends the budget.
   */
  def segments(start: Long, n: Int, shape: Shape, maxBytes: Long = Long.MaxValue): IndexedSeq[Segment] =
    within(start, n, maxBytes)((p, from, _) => (decoded(p, shape), from))

  /**
   * Values `[start, start + n)` page by page, as `part(page, from, count)` decodes those of a page
   * (its values and where they begin in them), the first that take at most `maxBytes` (one at
   * least); no page is asked for past the one that spends the budget.
   */
  private def within(start: Long, n: Int, maxBytes: Long)(part: (Int, Int, Int) => (Decoded, Int)): IndexedSeq[Segment] = {
    checkRange(start, n)
    val out = IndexedSeq.newBuilder[Segment]
    var row = start
    var used = 0L
    var spent = false
    var p = if (n > 0) pageOf(start) else numPages
    while (row < start + n && !spent) {
      if (pageLength(p) > 0) {
        val from = (row - starts(p)).toInt
        val count = math.min(pageLength(p) - from, (start + n - row).toInt)
        val (data, at) = part(p, from, count)
        val (fit, bytes) = Decoded.valuesWithin(data, at, count, maxBytes - used, row == start)
        if (fit > 0) out += Segment(p, data, at, fit)
        used += bytes
        row += fit
        spent = fit < count
      }
      p += 1
    }
    out.result()
  }

  /** The pages, not empty, that hold values `[start, start + n)`. */
  private def pagesHolding(start: Long, n: Int): IndexedSeq[Int] = {
    val first = if (n > 0) pageOf(start) else numPages
    (first until numPages).takeWhile(p => starts(p) < start + n).filter(pageLength(_) > 0)
  }

  /** `e` under any `nullable.no_nulls` wrappers. */
  private def withoutNoNulls(e: ArrayEncoding): ArrayEncoding =
    if (e.hasNullable && e.getNullable.hasNoNulls) withoutNoNulls(e.getNullable.getNoNulls.getValues) else e

  /**
   * The file offset and size of the page buffer in which `e`, an encoding of page p, keeps values
   * of `bits` (whole bytes) plainly: flat and uncompressed (possibly under `nullable.no_nulls`),
   * `count` values at least. None for any other encoding.
   */
  private def plainBuffer(p: Int, e: ArrayEncoding, bits: Int, count: Long): Option[(Long, Long)] = {
    val values = withoutNoNulls(e)
    if (!values.hasFlat || bits % 8 != 0) return None
    val flat = values.getFlat
    val page = meta.getPages(p)
    val i = flat.getBuffer.getBufferIndex
    Option.when(flat.getBitsPerValue == bits && !flat.hasCompression && flat.hasBuffer &&
      flat.getBuffer.getBufferType == Buffer.BufferType.page && i >= 0 && i < page.getBufferOffsetsCount &&
      page.getBufferSizes(i) >= count * (bits / 8))((page.getBufferOffsets(i), page.getBufferSizes(i)))
  }

  /**
   * The file offset of page p's first value when the page stores fixed-size lists of `dimension`
   * items of `itemBits` plainly (see [[plainBuffer]]); None for any other page.
   */
  private[v2_0] def plainLists(p: Int, dimension: Int, itemBits: Int): Option[Long] = {
    val lists = withoutNoNulls(encoding(p))
    if (!lists.hasFixedSizeList || lists.getFixedSizeList.getDimension != dimension) None
    else plainBuffer(p, lists.getFixedSizeList.getItems, itemBits, pageLength(p).toLong * dimension).map(_._1)
  }

  /** The file offset of page p's first value when the page stores values of `bits` plainly (see [[plainBuffer]]); None otherwise. */
  private[v2_0] def plainValues(p: Int, bits: Int): Option[Long] = plainBuffer(p, encoding(p), bits, pageLength(p)).map(_._1)

  /**
   * Reads fixed-size lists `[start, start + n)` (see [[plainLists]]) from the file straight into
   * `target`, value after value, without decoding their pages; false, with nothing read, when a
   * page holding them stores them otherwise.
   */
  def readPlainListsInto(start: Long, n: Int, dimension: Int, itemBits: Int, target: ArrowBuf): Boolean =
    readPlainInto(start, n, dimension.toLong * (itemBits / 8), plainLists(_, dimension, itemBits), target)

  /** Reads values `[start, start + n)` of `bits` each (see [[plainValues]]) straight into `target`, as [[readPlainListsInto]]. */
  def readPlainValuesInto(start: Long, n: Int, bits: Int, target: ArrowBuf): Boolean =
    readPlainInto(start, n, bits / 8, plainValues(_, bits), target)

  private def readPlainInto(start: Long, n: Int, valueBytes: Long, plainAt: Int => Option[Long], target: ArrowBuf): Boolean = {
    checkRange(start, n)
    val pages = pagesHolding(start, n)
    val offsets = pages.map(plainAt)
    val plain = offsets.forall(_.isDefined)
    if (plain) pages.zip(offsets).foreach { case (p, offset) =>
      val from = math.max(start, starts(p)) - starts(p)
      val to = math.min(start + n, starts(p + 1)) - starts(p)
      val at = (starts(p) + from - start) * valueBytes
      container.readInto(offset.get + from * valueBytes, target.nioBuffer(at, ((to - from) * valueBytes).toInt), s"${where(p)} rows $from-$to")
    }
    plain
  }

  /**
   * Where page p keeps its strings when they are stored plainly: a binary page whose end offsets
   * (64 bits) and bytes (8 bits) are flat and uncompressed, each in a page buffer of its own (either
   * possibly under `nullable.no_nulls`; nulls, if any, in the offsets' adjustment, §2.6). None for any other page.
   */
  private def plainBinary(p: Int): Option[ColumnReader.PlainBinary] = {
    val e = withoutNoNulls(encoding(p))
    if (!e.hasBinary) return None
    val b = e.getBinary
    for {
      (ends, _) <- plainBuffer(p, b.getIndices, 64, pageLength(p))
      (bytes, bytesSize) <- plainBuffer(p, b.getBytes, 8, 0)
      if b.getNullAdjustment > 0
    } yield ColumnReader.PlainBinary(ends, bytes, bytesSize, b.getNullAdjustment)
  }

  /**
   * Values `[start, start + n)` of a string or binary column read from the parts of their pages
   * that hold them (the values' end offsets, then their bytes), without reading or decoding whole
   * pages: a few rows of a page of long strings cost their own bytes, not the page's megabytes.
   * With `maxBytes`, as [[segments]]. None, with nothing read, where a page holding them stores
   * them otherwise ([[plainBinary]]).
   */
  def plainBinarySegments(start: Long, n: Int, maxBytes: Long): Option[IndexedSeq[Segment]] = {
    checkRange(start, n)
    val pages = pagesHolding(start, n)
    val layouts = pages.flatMap(p => plainBinary(p).map(p -> _)).toMap
    Option.when(layouts.size == pages.size)(within(start, n, maxBytes)((p, from, count) => (binaryPart(p, layouts(p), from, count), 0)))
  }

  /** Values `[from, from + count)` of plain binary page p: their end offsets (and the one before), then their bytes. */
  private def binaryPart(p: Int, layout: ColumnReader.PlainBinary, from: Int, count: Int): Decoded = {
    val before = if (from == 0) 0 else 1
    val raw = container.read(layout.ends + 8L * (from - before), 8L * (count + before), s"the string end offsets of ${where(p)}")
    val corrupt = (detail: String) => new CorruptFileException(path, s"${where(p)}: string end offsets$detail")
    // Where the first value's bytes start: the end of the one before it, 0 at the page's start.
    val start = if (before == 0) 0L else PageDecoder.endOffsets(raw, 0, 1, layout.adjustment, 0L, from - 1L)(corrupt)._2(1)
    val (validity, offsets) = PageDecoder.endOffsets(raw, 8 * before, count, layout.adjustment, start, from)(corrupt)
    if (start + offsets(count) > layout.bytesSize) throw new CorruptFileException(path,
      s"${where(p)}: values $from until ${from + count} end at byte ${start + offsets(count)} of a buffer of ${layout.bytesSize}")
    val data = if (offsets(count) == 0) Array.emptyByteArray
      else container.read(layout.bytes + start, offsets(count), s"the string bytes of ${where(p)} values $from-${from + count}")
    Decoded.VariableValues(count, validity, offsets, data, 0)
  }

  /** For a list column: itemStarts(p) = the global item number of page p's first item (§2.8). */
  lazy val itemStarts: Array[Long] = {
    val s = new Array[Long](numPages + 1)
    for (p <- 0 until numPages) {
      val e = encoding(p)
      if (!e.hasList) throw new CorruptFileException(path,
        s"${where(p)}: expected a list encoding for a list field, found ${e.getArrayEncodingCase.name.toLowerCase}")
      if (e.getList.getNumItems < 0) throw new CorruptFileException(path, s"${where(p)}: implausible num_items")
      s(p + 1) = s(p) + e.getList.getNumItems
    }
    s
  }

  /** For a struct header column: fails unless every page is a struct page. */
  def checkStructPages(): Unit =
    for (p <- 0 until numPages if !encoding(p).hasStruct) {
      if (encoding(p).hasPackedStruct) throw new UnsupportedFeatureException(
        s"${where(p)} of $path is a packed struct (lance-encoding:packed), which sparklance does not read")
      throw new CorruptFileException(path,
        s"${where(p)}: expected a struct header page, found ${encoding(p).getArrayEncodingCase.name.toLowerCase}")
    }
}

private[v2_0] object ColumnReader {
  /** A plain binary page's buffers: its end offsets' and bytes' file offsets, the bytes' size, and the null adjustment. */
  final case class PlainBinary(ends: Long, bytes: Long, bytesSize: Long, adjustment: Long)
}
