package sparklance.format.file.v2_1

import com.google.protobuf.InvalidProtocolBufferException
import scala.jdk.CollectionConverters._
import sparklance.format.Primitives
import sparklance.format.file.{ContainerReader, TypedAny}
import sparklance.format.proto.Encodings21Protos.{FullZipLayout, MiniBlockLayout, PageLayout}
import sparklance.format.proto.Encodings21Protos.PageLayout.LayoutCase

/**
 * A run of one decoded page: its rows `[firstRow, firstRow + rows)`, which are level entries
 * `[levelFrom, levelTo)` and slots `[slotFrom, slotTo)`.
 */
private[v2_1] final case class Segment(page: PageData, firstRow: Int, rows: Int, levelFrom: Int, levelTo: Int, slotFrom: Int, slotTo: Int) {
  /** Its first `n` rows. */
  def take(n: Int): Segment =
    if (n >= rows) this else copy(rows = n, levelTo = page.levelOfRow(firstRow + n), slotTo = page.slotOfRow(firstRow + n))

  /** The Arrow memory its values take. */
  def bytes: Long = page.slotBytes(slotFrom, slotTo)
}

private[v2_1] object Segment {
  def apply(page: PageData, firstRow: Int, rows: Int): Segment =
    Segment(page, firstRow, rows, page.levelOfRow(firstRow), page.levelOfRow(firstRow + rows),
      page.slotOfRow(firstRow), page.slotOfRow(firstRow + rows))

  /** The first `n` rows of `segments`. */
  def take(segments: Seq[Segment], n: Int): Seq[Segment] = {
    var left = n
    segments.iterator.takeWhile(_ => left > 0).map { s => val t = s.take(left); left -= t.rows; t }.toSeq
  }
}

/**
 * The pages of one leaf column. A row range of a mini-block page without repetition is decoded
 * from only the chunks holding it, and one of a full-zip page without repetition (vectors, long
 * strings and binaries) from only its bytes, so that no array holds a page (pages are up to 8 MB
 * stored, and may decode to far more; G1 allocates arrays above half a heap region outside its
 * young generation, and frees them only by a concurrent cycle). Bytes are read ahead for the next ranges of an ordered scan, but not with `sparseRows` (the
 * rows asked for are scattered runs), which also decodes pages whole where a run needs more than
 * a quarter of a page's chunks. Other pages are decoded whole, on demand, and the last two decoded
 * are kept, so that consecutive increasing row ranges decode each page once.
 *
 * Pages are fetched ahead ([[sparklance.format.io.InputFile.prefetch]]): the first read of a page
 * has the file fetch the next one to fetch in the background. In an ordered scan those are the
 * pages starting before `prefetchBefore()` (the end of the rows it reads, 0 for none); with
 * `sparseRows`, the pages of which those rows are a quarter or more, whose bytes the
 * scattered reads mostly need anyway: on an object store, one request for the page beside the
 * other columns' rather than one after another for its chunk index and its chunks.
 */
private[v2_1] final class ColumnReader21(container: ContainerReader, val index: Int, fieldName: String,
    sparseRows: Option[org.roaringbitmap.RoaringBitmap] = None, prefetchBefore: () => Long = () => 0L) {
  private val sparse = sparseRows.isDefined
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

  /** Page p's buffers as (offset, size), checked against the file. */
  private def buffers(p: Int): (IndexedSeq[Long], IndexedSeq[Long]) = {
    val c = ctx(p)
    val pg = pages(p)
    val n = pg.getBufferOffsetsCount
    if (pg.getBufferSizesCount != n) throw c.corrupt(s"$n buffer offsets but ${pg.getBufferSizesCount} sizes")
    val offsets = (0 until n).map(pg.getBufferOffsets)
    val sizes = (0 until n).map(pg.getBufferSizes)
    (0 until n).foreach(i => container.checkRange(offsets(i), sizes(i), s"${c.where} buffer $i"))
    (offsets, sizes)
  }

  private def layoutOf(p: Int): PageLayout = {
    val c = ctx(p)
    val bytes = TypedAny.unpackDirect(pages(p).getEncoding, "lance.encodings21.PageLayout", path, c.where)
    try PageLayout.parseFrom(bytes)
    catch { case e: InvalidProtocolBufferException => throw new sparklance.format.CorruptFileException(path, s"${c.where}: malformed page layout", e) }
  }

  /** The last page starting at or before `row` (an empty page may precede the one holding it). */
  private def pageOf(row: Long): Int = java.util.Arrays.binarySearch(rowStarts, row) match { case i if i >= 0 => i; case i => -i - 2 }

  // The pages up to here had what follows them fetched: a scan goes through a column's pages in order.
  private var prefetchedAfter = -1
  // Fetches alternate between the column's two streams, so that a fetch never replaces the one of the page being read.
  private var fetches = 0

  /** Whether page p is fetched ahead of its reads (see the class). */
  private def fetchesAhead(p: Int): Boolean = pages(p).getLength > 0 && (sparseRows match {
    case None => rowStarts(p) < prefetchBefore()
    case Some(rows) => rows.rangeCardinality(rowStarts(p), rowStarts(p + 1)) * 4 >= pages(p).getLength
  })

  /** The first page from `p` on fetched ahead: `p` itself in an ordered scan, the next one whose rows it reads with `sparse`. */
  private def nextFetched(p: Int): Int =
    if (!sparse) p else Iterator.range(p, pages.size).find(fetchesAhead).getOrElse(pages.size)

  private def prefetchNext(p: Int): Unit = if (p > prefetchedAfter) {
    val next = nextFetched(p + 1)
    // The pages between are read without one: only the arrival at `next` fetches what follows it.
    prefetchedAfter = math.max(p, next - 1)
    prefetch(next)
  }

  /** Fetches ahead the page holding `row`, or with `sparse` the first page from there on whose rows are read (see [[prefetchNext]] for the pages after it). */
  def prefetchPageOf(row: Long): Unit = if (row >= 0 && row < numRows) {
    var p = pageOf(row)
    while (p < pages.size && rowStarts(p + 1) <= row) p += 1 // past empty pages
    val first = nextFetched(p)
    prefetchedAfter = math.max(prefetchedAfter, first - 1)
    prefetch(first)
  }

  /**
   * Has the file fetch page p's buffers (its first `MaxPrefetch` bytes) in the background, under
   * the other of the column's two streams than the fetch before, so that fetching the next page
   * leaves page p's bytes to its reads.
   */
  private def prefetch(p: Int): Unit =
    if (p < pages.size && fetchesAhead(p)) {
      // A page whose buffers lie outside the file is reported where it is read, not here.
      try {
        val (offsets, sizes) = buffers(p)
        val used = offsets.indices.filter(sizes(_) > 0)
        if (used.nonEmpty) {
          val start = used.map(offsets).min
          val end = used.map(i => offsets(i) + sizes(i)).max
          fetches += 1
          container.prefetch(2 * index + (fetches & 1), start, math.min(end - start, ColumnReader21.MaxPrefetch.toLong).toInt)
        }
      } catch { case _: sparklance.format.CorruptFileException => }
    }

  private def decode(p: Int, kind: LeafKind): PageData = {
    prefetchNext(p)
    val c = ctx(p)
    val pg = pages(p)
    val rows = pg.getLength
    if (rows < 0 || rows > Int.MaxValue) throw c.corrupt(s"page of $rows rows")
    val (offsets, sizes) = buffers(p)
    val n = offsets.size
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
    val layout = layoutOf(p)
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

  /** How rows of a page can be read without decoding the page whole. */
  private sealed trait PageWindows

  /**
   * Where the chunks of a mini-block page without repetition lie: its layout, its buffers, its
   * chunk metadata, and per chunk its first item (row) and first byte in the chunk buffer.
   */
  private final class ChunkIndex(val pageIndex: Int, val layout: MiniBlockLayout, val offsets: IndexedSeq[Long], val sizes: IndexedSeq[Long],
      val chunkMeta: Array[Byte], val wordBytes: Int, val firstItem: Array[Long], val firstByte: Array[Long]) extends PageWindows {
    def numChunks: Int = firstItem.length - 1
    /** The page's buffers after the chunks (the dictionary), read once for every run decoded. */
    lazy val trailing: IndexedSeq[Slice] =
      offsets.indices.drop(2).map(i => Slice.of(container.read(offsets(i), sizes(i), s"column $index ('$fieldName') buffer $i")))
    def chunkOf(row: Int): Int = java.util.Arrays.binarySearch(firstItem, row.toLong) match { case i if i >= 0 => i; case i => -i - 2 }
    /** The page's dictionary, decoded once for every chunk values are picked from. */
    lazy val dictionary: Slots = MiniBlockPage.dictionary(layout, trailing, ctx(pageIndex))
    lazy val layers: Layers = new Layers(layout.getLayersList.asScala.toIndexedSeq, ctx(pageIndex))
  }

  /**
   * A full-zip page of fixed-width values without control words or item validity (vectors
   * without nulls): row r's value is bytes `[r·valueBytes, (r+1)·valueBytes)` of its buffer at `offset`.
   */
  private final class FixedRows(val layout: FullZipLayout, val valueBytes: Int, val offset: Long, val size: Long) extends PageWindows

  /**
   * A full-zip page of variable-width values without repetition: row r is bytes
   * `[starts(r), starts(r + 1))` of its data buffer at `offset`, which its repetition index (the
   * buffer at `indexOffset`) tells.
   */
  private final class VariableRows(val pageIndex: Int, val layout: FullZipLayout, val offset: Long, val size: Long,
      indexOffset: Long, indexSize: Long) extends PageWindows {
    lazy val starts: Array[Long] = {
      val c = ctx(pageIndex)
      val rows = pages(pageIndex).getLength.toInt
      val width = (indexSize / (rows + 1L)).toInt
      if (indexSize != width.toLong * (rows + 1) || !Set(1, 2, 4, 8).contains(width))
        throw c.corrupt(s"a repetition index of $indexSize bytes for $rows rows")
      val index = container.read(indexOffset, indexSize, s"${c.where} repetition index")
      val out = Primitives.longs(rows + 1)(r => Bytes.uN(index, r * width, width))
      var r = 0
      while (r < rows) {
        if (out(r) < 0 || out(r) > out(r + 1)) throw c.corrupt(s"the repetition index has row ${r + 1} start before row $r")
        r += 1
      }
      if (out(rows) > size) throw c.corrupt(s"the repetition index ends at ${out(rows)}, past the $size bytes of the page")
      out
    }
  }

  // Windows come back to the same pages: how each is windowed is kept (None: decoded whole).
  private val windowsOf = new java.util.LinkedHashMap[Integer, Option[PageWindows]](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[Integer, Option[PageWindows]]): Boolean = size() > 8
  }

  private def windows(p: Int): Option[PageWindows] = {
    prefetchNext(p)
    val known = windowsOf.get(p)
    if (known != null) return known
    val layout = layoutOf(p)
    val found = layout.getLayoutCase match {
      case LayoutCase.MINI_BLOCK_LAYOUT => readChunkIndex(p, layout.getMiniBlockLayout)
      case LayoutCase.FULL_ZIP_LAYOUT if layout.getFullZipLayout.getDetailsCase == FullZipLayout.DetailsCase.BITS_PER_OFFSET =>
        variableRows(p, layout.getFullZipLayout)
      case LayoutCase.FULL_ZIP_LAYOUT => fixedRows(p, layout.getFullZipLayout)
      case _ => None
    }
    windowsOf.put(p, found)
    found
  }

  private def chunkIndex(p: Int): Option[ChunkIndex] = windows(p).collect { case ix: ChunkIndex => ix }

  private def readChunkIndex(p: Int, m: MiniBlockLayout): Option[ChunkIndex] = {
    if (m.hasRepCompression || m.getRepetitionIndexDepth > 0) return None
    val c = ctx(p)
    val (offsets, sizes) = buffers(p)
    if (offsets.size < 2) throw c.corrupt(s"mini-block page with ${offsets.size} buffers")
    val wordBytes = if (m.getHasLargeChunk) 4 else 2
    val meta = container.read(offsets(0), sizes(0), s"${c.where} chunk metadata")
    if (meta.length % wordBytes != 0) throw c.corrupt(s"chunk metadata of ${meta.length} bytes")
    val numChunks = meta.length / wordBytes
    val firstItem = new Array[Long](numChunks + 1)
    val firstByte = new Array[Long](numChunks + 1)
    for (i <- 0 until numChunks) {
      val word = Bytes.uN(meta, i * wordBytes, wordBytes)
      firstByte(i + 1) = firstByte(i) + ((word >>> 4) + 1) * 8
      firstItem(i + 1) = if (i == numChunks - 1) m.getNumItems else firstItem(i) + (1L << (word & 0xf).toInt)
      // Chunks out of order are left to the whole page's decoding, which reports them.
      if (firstItem(i + 1) <= firstItem(i)) return None
    }
    if (firstItem(numChunks) != pages(p).getLength || firstByte(numChunks) > sizes(1)) return None
    Some(new ChunkIndex(p, m, offsets, sizes, meta, wordBytes, firstItem, firstByte))
  }

  private def fixedRows(p: Int, f: FullZipLayout): Option[FixedRows] = {
    val e = f.getValueCompression
    import sparklance.format.proto.Encodings21Protos.CompressiveEncoding.CompressionCase.{FIXED_SIZE_LIST, FLAT}
    val plain = e.getCompressionCase match {
      case FLAT => !e.getFlat.hasData
      case FIXED_SIZE_LIST => !e.getFixedSizeList.getHasValidity && e.getFixedSizeList.getValues.getCompressionCase == FLAT &&
        !e.getFixedSizeList.getValues.getFlat.hasData
      case _ => false
    }
    val rows = pages(p).getLength
    if (!plain || f.getBitsRep != 0 || f.getBitsDef != 0 || f.getDetailsCase != FullZipLayout.DetailsCase.BITS_PER_VALUE ||
      f.getBitsPerValue % 8 != 0 || f.getNumItems != rows || f.getNumVisibleItems != rows) return None
    val (offsets, sizes) = buffers(p)
    val valueBytes = f.getBitsPerValue / 8
    if (offsets.isEmpty || valueBytes <= 0 || valueBytes > Int.MaxValue || sizes(0) < rows * valueBytes) None
    else Some(new FixedRows(f, valueBytes.toInt, offsets(0), sizes(0)))
  }

  private def variableRows(p: Int, f: FullZipLayout): Option[VariableRows] = {
    val rows = pages(p).getLength
    if (f.getBitsRep != 0 || f.getNumItems != rows || f.getNumVisibleItems != rows) return None
    val (offsets, sizes) = buffers(p)
    if (offsets.size < 2) None else Some(new VariableRows(p, f, offsets(0), sizes(0), offsets(1), sizes(1)))
  }

  // Bytes read ahead of the windows of an ordered scan: [aheadStart, aheadStart + aheadLength) of
  // the file, at the start of `ahead`.
  private var aheadStart = -1L
  private var aheadLength = 0
  private var ahead: Array[Byte] = _

  // The arrays read-ahead bytes go to, reused from call to call (`segments`, `gather`): a fresh
  // array per read (256 KB from local files) was 7% of a projection's samples (JFR), spent
  // allocating and zeroing it. A call's windows may slice the array they were read into, and their
  // values are copied out (into Arrow memory) before the call returns, so an array may be read into
  // again in a later call, but not in the call that lent it: a second read in one call takes the
  // other array, and a third a fresh one (not kept). Arrays larger than `PooledBytes` are not kept.
  private val pool = new Array[Array[Byte]](2)
  private val lentInCall = new Array[Boolean](2)
  private var aheadSlot = -1 // which pool array `ahead` is, -1 for none

  private def startCall(): Unit = {
    lentInCall(0) = false
    lentInCall(1) = false
  }

  /** An array of at least `length` bytes that nothing handed out in this call refers to; sets `aheadSlot`. */
  private def readArray(length: Int): Array[Byte] = {
    val free = if (!lentInCall(0)) 0 else if (!lentInCall(1)) 1 else -1
    if (free < 0 || length > ColumnReader21.PooledBytes) { aheadSlot = -1; new Array[Byte](length) }
    else {
      if (pool(free) == null || pool(free).length < length) pool(free) = new Array[Byte](length)
      aheadSlot = free
      pool(free)
    }
  }

  /**
   * Bytes `[position, position + length)` of a page buffer that ends at `limit`: exactly those when
   * rows are scattered (`sparse`); otherwise read ahead by the file's read-ahead size (not past
   * `limit`), so that the next windows of an ordered scan find their bytes read. The slice is
   * valid until the call (`segments`, `gather`) returns.
   */
  private def bytes(position: Long, length: Long, limit: Long, what: => String): Slice =
    if (sparse) Slice.of(container.read(position, length, what))
    else {
      if (ahead == null || position < aheadStart || position + length > aheadStart + aheadLength) {
        val n = math.max(length, math.min(container.readAheadBytes.toLong, limit - position))
        if (n > Int.MaxValue - 16) throw new sparklance.format.CorruptFileException(path, s"$what is $n bytes, more than one read can hold")
        // No stale range is left to hit if the read fails part way.
        ahead = null
        val into = readArray(n.toInt)
        container.readInto(position, java.nio.ByteBuffer.wrap(into, 0, n.toInt), what)
        ahead = into
        aheadStart = position
        aheadLength = n.toInt
      }
      if (aheadSlot >= 0) lentInCall(aheadSlot) = true
      Slice(ahead, (position - aheadStart).toInt, length.toInt)
    }

  /**
   * Rows [from, to) of page p decoded alone, without the rest of the page: the first row of the part
   * decoded, and the part as a page of its own. From a mini-block page without repetition only the
   * chunks holding them (for scattered rows, only where they need at most a quarter of the
   * chunks); from a full-zip page without repetition only their bytes, and of variable-width values
   * only the first rows that decode to at most `maxBytes` (see [[FullZipPage.decode]]). None otherwise.
   */
  private def window(p: Int, from: Int, to: Int, maxBytes: Long = Long.MaxValue, atLeastOne: Boolean = true)
      : Option[(Int, PageData)] = windows(p).flatMap {
    case index: ChunkIndex =>
      import index._
      val (c0, c1) = (chunkOf(from), chunkOf(to - 1))
      if (sparse && (c1 - c0 + 1) * 4 > numChunks) None
      else {
        val c = ctx(p)
        val chunkBytes = bytes(offsets(1) + firstByte(c0), firstByte(c1 + 1) - firstByte(c0), offsets(1) + sizes(1), s"${c.where} chunks $c0-$c1")
        // Without repetition a chunk holds one level entry per item; a chunk saying otherwise is
        // left to the whole page's decoding, which checks the page as a whole.
        val levelsMatch = !layout.hasDefCompression || (c0 to c1).forall { i =>
          Bytes.u16(chunkBytes.array, chunkBytes.offset + (firstByte(i) - firstByte(c0)).toInt) == firstItem(i + 1) - firstItem(i)
        }
        if (!levelsMatch) None
        else {
          val part = IndexedSeq(Slice(chunkMeta, c0 * wordBytes, (c1 - c0 + 1) * wordBytes), chunkBytes) ++ trailing
          val items = (firstItem(c1 + 1) - firstItem(c0)).toInt
          // The page's dictionary is decoded once for all its windows.
          Some(firstItem(c0).toInt -> MiniBlockPage.decode(layout.toBuilder.setNumItems(items).build(), part, items, c, windowArrays,
            if (layout.hasDictionary) Some(dictionary) else None))
        }
      }
    case rows: FixedRows =>
      val c = ctx(p)
      val n = to - from
      val data = bytes(rows.offset + from.toLong * rows.valueBytes, n.toLong * rows.valueBytes, rows.offset + rows.size, s"${c.where} rows $from-$to")
      Some(from -> FullZipPage.decode(rows.layout.toBuilder.setNumItems(n).setNumVisibleItems(n).build(), IndexedSeq(data), n, c))
    case rows: VariableRows =>
      val c = ctx(p)
      val n = to - from
      val (a, b) = (rows.starts(from), rows.starts(to))
      if (b - a > Int.MaxValue - 16) None
      else {
        val data = bytes(rows.offset + a, b - a, rows.offset + rows.size, s"${c.where} rows $from-$to")
        Some(from -> FullZipPage.decode(rows.layout.toBuilder.setNumItems(n).setNumVisibleItems(n).build(), IndexedSeq(data), n, c,
          maxBytes, atLeastOne))
      }
  }

  /**
   * Rows `rows` (ascending, distinct) of a column without repetition (a top-level leaf field), as
   * the leaf node Arrow loading takes: each row's validity from its def level, and its value. From
   * a mini-block page the values are picked out of only the chunks holding the rows (one read for
   * chunks close together), value by value where the encoding allows; from a full-zip page
   * out of only the bytes of the rows; other pages are decoded whole (and
   * kept) and the rows' values picked from them. With `maxBytes`, only the first rows whose values
   * take at most that much Arrow memory (one row at least): the node then holds fewer rows.
   */
  def gather(rows: Array[Long], kind: LeafKind, maxBytes: Long = Long.MaxValue): NodeOut = {
    startCall()
    val out = new NodeOut(false)
    var used = 0L
    var spent = false
    var i = 0
    while (i < rows.length && !spent) {
      val r = rows(i)
      if (r < 0 || r >= numRows || (i > 0 && r <= rows(i - 1)))
        throw new IllegalArgumentException(s"Row $r of column $index of $path is out of order or range (${numRows} rows)")
      val p = pageOf(r)
      var j = i + 1
      while (j < rows.length && rows(j) < rowStarts(p + 1)) j += 1
      val local = new Array[Int](j - i)
      var k = 0
      while (k < local.length) { local(k) = (rows(i + k) - rowStarts(p)).toInt; k += 1 }
      val budget = Budget(maxBytes - used, i == 0)
      val (taken, bytes) = (if (cache.containsKey(p)) None else windows(p)) match {
        case Some(ix: ChunkIndex) => pickChunks(p, ix, local, out, budget)
        case Some(_: VariableRows) => pickRuns(p, local, out, budget)
        case Some(fixed: FixedRows) => pickFixed(p, fixed, local, out, budget)
        case _ => pickPage(p, kind, local, out, budget)
      }
      used += bytes
      spent = taken < local.length
      i += taken
    }
    out
  }

  /** Arrow memory rows may still take, and whether the first row is taken whatever it takes. */
  private final case class Budget(bytes: Long, atLeastOne: Boolean)

  /** One row's validity, for a flat column: def level 0 is a value, the layer's null code a null. */
  private def addValidity(out: NodeOut, defLevel: Int, layers: Layers, c: Ctx): Unit = {
    if (defLevel == 0) out.validity.add(true)
    else if (defLevel == layers.nullCode(0)) { out.validity.add(false); out.nulls += 1 }
    else throw c.corrupt(s"def level $defLevel in a column without lists (layers $layers)")
    out.length += 1
  }

  private def requireFlat(layers: Layers, c: Ctx): Unit =
    if (layers.size != 1 || layers.isList(0)) throw c.corrupt(s"rep/def layers $layers where a field without lists was expected")

  /** Picks the rows `local` of page p decoded whole, as many as fit `budget`; returns how many, and their bytes. */
  private def pickPage(p: Int, kind: LeafKind, local: Array[Int], out: NodeOut, budget: Budget): (Int, Long) = {
    val c = ctx(p)
    val d = page(p, kind)
    if (d.rows != pages(p).getLength) throw c.corrupt("row count mismatch")
    requireFlat(d.layers, c)
    val slots = new Array[Int](local.length)
    var used = 0L
    var k = 0
    var more = true
    while (more && k < local.length) {
      val slot = d.slotOfRow(local(k))
      val bytes = d.slotBytes(slot, slot + 1)
      if (used + bytes > budget.bytes && (k > 0 || !budget.atLeastOne)) more = false
      else {
        addValidity(out, d.defAt(d.levelOfRow(local(k))), d.layers, c)
        slots(k) = slot
        used += bytes
        k += 1
      }
    }
    val picked = Slots.pick(d.slots, slots, 0, k, c)
    out.segments += ((picked, 0, picked.count))
    (k, used)
  }

  /**
   * Picks the rows `local` of a full-zip page of variable-width values, each run of consecutive rows
   * decoded from only its bytes, as many as fit `budget`; returns how many, and their bytes.
   */
  private def pickRuns(p: Int, local: Array[Int], out: NodeOut, budget: Budget): (Int, Long) = {
    val c = ctx(p)
    var used = 0L
    var k = 0
    var spent = false
    while (k < local.length && !spent) {
      var end = k + 1
      while (end < local.length && local(end) == local(end - 1) + 1) end += 1
      val (_, d) = window(p, local(k), local(end - 1) + 1, budget.bytes - used, budget.atLeastOne && k == 0)
        .getOrElse(throw c.corrupt("a full-zip page that its first rows said could be read by rows"))
      requireFlat(d.layers, c)
      var r = 0
      while (r < d.rows) { addValidity(out, d.defAt(d.levelOfRow(r)), d.layers, c); r += 1 }
      out.segments += ((d.slots, d.slotOfRow(0), d.slotOfRow(d.rows)))
      used += d.slotBytes(d.slotOfRow(0), d.slotOfRow(d.rows))
      spent = d.rows < end - k
      k += d.rows
    }
    (k, used)
  }

  /**
   * Picks the rows `local` of a full-zip page of fixed-width values (vectors), as many as fit
   * `budget`, from only their bytes: one read for rows less than ReadGap bytes apart, up to MaxRead
   * bytes. Decoding the page whole for them allocated and filled a page-sized array per page for a
   * few rows of each: JFR's allocation samples of a filtered scan of 3M rows of 128-float vectors
   * counted 38 GB of page buffers over 6 queries.
   */
  private def pickFixed(p: Int, rows: FixedRows, local: Array[Int], out: NodeOut, budget: Budget): (Int, Long) = {
    val c = ctx(p)
    val width = math.max(1, rows.valueBytes).toLong
    var used = 0L
    var k = 0
    var spent = false
    while (k < local.length && !spent) {
      var end = k + 1
      while (end < local.length && (local(end) - local(end - 1) - 1) * width <= ColumnReader21.ReadGap &&
          (local(end) - local(k) + 1) * width <= ColumnReader21.MaxRead) end += 1
      val fit = (budget.bytes - used) / width
      val take = if (fit >= end - k) end - k else if (fit > 0) fit.toInt else if (k == 0 && budget.atLeastOne) 1 else 0
      if (take == 0) spent = true
      else {
        val (from, d) = window(p, local(k), local(k + take - 1) + 1)
          .getOrElse(throw c.corrupt("a full-zip page that its first rows said could be read by rows"))
        requireFlat(d.layers, c)
        val slots = new Array[Int](take)
        var i = 0
        while (i < take) {
          val row = local(k + i) - from
          addValidity(out, d.defAt(d.levelOfRow(row)), d.layers, c)
          slots(i) = d.slotOfRow(row)
          i += 1
        }
        val picked = Slots.pick(d.slots, slots, 0, take, c)
        out.segments += ((picked, 0, picked.count))
        used += take * width
        spent = take < end - k
        k += take
      }
    }
    (k, used)
  }

  // The first window of each `segments` call decodes into arrays reused from call to call: its
  // segments are copied out (into Arrow memory) before the next call. A fresh array per window was
  // a top frame of a JFR profile of scans, 11% of the task samples of a one-column sum.
  private val windowArrays = new PageArrays.Reused

  // The chunks scattered rows (`sparse`) are picked from are read into one buffer, reused: every
  // value picked is copied out of it (a read of every chunk, for rows spread over all of them,
  // allocated and zeroed hundreds of megabytes per change-data read).
  private var picking: Array[Byte] = Array.emptyByteArray
  private def pickBuffer(length: Int): Array[Byte] = {
    if (picking.length < length) picking = new Array[Byte](length)
    picking
  }

  /**
   * Bytes `[position, position + length)` of chunks rows are picked from, in a page buffer that ends
   * at `limit`. Rows picked close together (`dense`: a scan around deleted rows) are read ahead as
   * an ordered scan's windows are, so that the next picks find their chunks read: read exactly,
   * each batch's chunks were a request of their own, six times the GETs of the same scan on S3
   * without deletions. Other rows get exactly their chunks, in `picking`.
   */
  private def pickedChunks(position: Long, length: Int, limit: Long, dense: Boolean, what: => String): Slice =
    if (dense) bytes(position, length, limit, what)
    else {
      val into = pickBuffer(length)
      container.readInto(position, java.nio.ByteBuffer.wrap(into, 0, length), what)
      Slice(into, 0, length)
    }

  /** Picks the rows `local` of a mini-block page, as many as fit `budget`; returns how many, and their bytes. */
  private def pickChunks(p: Int, ix: ChunkIndex, local: Array[Int], out: NodeOut, budget: Budget): (Int, Long) = {
    import ix._
    val c = ctx(p)
    requireFlat(layers, c)
    val hasDef = layout.hasDefCompression
    val large = layout.getHasLargeChunk
    val numBuffers = layout.getNumBuffers.toInt
    // At least a quarter of the rows they span, outside a scan of scattered rows: reading ahead
    // reads few bytes they do not need. Rows further apart (the live rows of a fragment most of
    // whose rows are deleted) would have it read far more.
    val dense = !sparse && local.nonEmpty && local.last - local.head + 1L <= 4L * local.length
    var used = 0L
    var k = 0
    var spent = false
    while (k < local.length && !spent) {
      // One read for the chunks of rows k until kEnd: chunks less than ReadGap bytes apart, up to MaxRead bytes.
      val c0 = chunkOf(local(k))
      var cLast = c0
      var kEnd = k + 1
      var more = true
      while (more && kEnd < local.length) {
        val next = if (local(kEnd) < firstItem(cLast + 1)) cLast else chunkOf(local(kEnd))
        if (firstByte(next) - firstByte(cLast + 1) <= ColumnReader21.ReadGap && firstByte(next + 1) - firstByte(c0) <= ColumnReader21.MaxRead) {
          cLast = next; kEnd += 1
        } else more = false
      }
      val length = (firstByte(cLast + 1) - firstByte(c0)).toInt
      val chunks = pickedChunks(offsets(1) + firstByte(c0), length, offsets(1) + sizes(1), dense, s"${c.where} chunks $c0-$cLast")
      var a = k
      while (a < kEnd && !spent) {
        val ch = chunkOf(local(a))
        var b = a + 1
        while (b < kEnd && local(b) < firstItem(ch + 1)) b += 1
        val count = (firstItem(ch + 1) - firstItem(ch)).toInt
        val parts = MiniBlockChunk.parse(chunks.array, chunks.offset + (firstByte(ch) - firstByte(c0)).toInt, (firstByte(ch + 1) - firstByte(ch)).toInt,
          hasRep = false, hasDef, numBuffers, large, ch, c)
        if (hasDef && parts.numLevels != count) throw c.corrupt(s"chunk $ch holds ${parts.numLevels} levels for $count values")
        val idx = new Array[Int](b - a)
        var q = 0
        while (q < idx.length) { idx(q) = local(a + q) - firstItem(ch).toInt; q += 1 }
        val values = ChunkPicks.pick(layout.getValueCompression, scala.collection.immutable.ArraySeq.unsafeWrapArray(parts.values),
          count, idx, 0, idx.length, c)
        val decoded = if (!layout.hasDictionary) values else values match {
          case f: Slots.Fixed => Slots.gather(dictionary, f, c)
          case e: Slots.Empty => e
          case other => throw c.corrupt(s"dictionary indices decoded to ${Slots.kind(other)}")
        }
        // Values of a dictionary (or long runs) may take far more than their chunk: only those that fit are kept.
        val (fit, taken) = Slots.fitting(decoded, 0, idx.length, budget.bytes - used, budget.atLeastOne && a == 0)
        if (hasDef) {
          val defs = Compressive.levels(layout.getDefCompression, parts.defs, parts.numLevels, c)
          q = 0
          while (q < fit) { addValidity(out, defs(idx(q)), layers, c); q += 1 }
        } else { out.validity.addMany(true, fit.toLong); out.length += fit }
        out.segments += ((decoded, 0, fit))
        used += taken
        spent = fit < idx.length
        a += fit
      }
      k = a
    }
    (k, used)
  }

  /**
   * Rows `[start, start + n)` read straight into `target` (n·valueBytes bytes at its start, e.g.
   * an Arrow buffer) where every page holding them is a plain fixed-width full-zip page of
   * `valueBytes` per row: no copy on the heap. False, with nothing read, where some page is not.
   */
  def readFixedRowsInto(start: Long, n: Int, valueBytes: Int, target: org.apache.arrow.memory.ArrowBuf): Boolean = {
    if (start < 0 || start + n > numRows) return false
    val first = pageOf(start)
    val parts = Iterator.from(first).takeWhile(p => p < pages.size && rowStarts(p) < start + n).map(p => p -> windows(p)).toSeq
    val plain = parts.forall { case (_, w) => w.exists { case r: FixedRows => r.valueBytes == valueBytes; case _ => false } }
    if (plain) parts.foreach { case (p, w) =>
      val rows = w.get.asInstanceOf[FixedRows]
      val from = math.max(start, rowStarts(p)) - rowStarts(p)
      val to = math.min(start + n, rowStarts(p + 1)) - rowStarts(p)
      val at = (rowStarts(p) + from - start) * valueBytes
      container.readInto(rows.offset + from * valueBytes, target.nioBuffer(at, ((to - from) * valueBytes).toInt), s"${ctx(p).where} rows $from-$to")
    }
    plain
  }

  /**
   * The page runs covering rows `[start, start + n)`; or, with `maxBytes`, only the first of them
   * whose values take at most that much Arrow memory (one row at least; see [[PageData.slotBytes]]).
   * Rows are counted as they are decoded: a window of a full-zip page decodes no value past the
   * budget, so the rows of one page may come in several calls.
   */
  def segments(start: Long, n: Int, kind: LeafKind, maxBytes: Long = Long.MaxValue): Seq[Segment] = {
    if (start + n > numRows)
      throw new sparklance.format.CorruptFileException(path, s"column $index ('$fieldName') has $numRows rows, ${start + n} needed")
    windowArrays.reclaim()
    startCall()
    val out = Seq.newBuilder[Segment]
    var row = start
    val end = start + n
    var used = 0L
    var spent = false
    var p = pageOf(start)
    while (row < end && !spent) {
      while (p < pages.size && rowStarts(p + 1) <= row) p += 1
      val first = row == start
      val left = maxBytes - used
      val from = (row - rowStarts(p)).toInt
      val to = (math.min(end, rowStarts(p + 1)) - rowStarts(p)).toInt
      val part = if (!cache.containsKey(p)) window(p, from, to, left, first) else None
      val (base, d) = part.getOrElse {
        val whole = page(p, kind)
        if (whole.rows != pages(p).getLength) throw ctx(p).corrupt("row count mismatch")
        (0, whole)
      }
      // A window cut by the budget holds fewer rows than asked for.
      val (fit, bytes) = d.rowsWithin(from - base, math.min(to - base, d.rows), left, first)
      if (fit > 0) out += Segment(d, from - base, fit)
      used += bytes
      row += fit
      spent = from + fit < to
      p += 1
    }
    out.result()
  }
}

private[v2_1] object ColumnReader21 {
  /**
   * Chunks picked from are read together when at most this many bytes (about a chunk) lie between
   * them: one read rather than two, for bytes that a few scattered rows would not need.
   */
  val ReadGap: Long = 8L << 10

  /**
   * The most bytes one read of chunks takes (a chunk larger is read alone): rows spread over a
   * whole page are read in pieces, not as one array the size of the page, which G1 allocates as a
   * humongous object outside the young generation (above half a heap region: 512 KB with 1 GB heaps).
   */
  val MaxRead: Long = 256L << 10

  /**
   * The largest read-ahead array a column reader keeps for reuse (two at most): a batch of long
   * values (a 64-byte string column: 512 KB per 8192 rows) reads more than local files' 256 KB at
   * once. Object stores' 8 MB reads are not kept: two per column of a wide table would hold twice
   * the memory the single read-ahead array did, for an allocation their latency dwarfs.
   */
  val PooledBytes: Int = 4 << 20

  /**
   * The most bytes of a page fetched ahead ([[ColumnReader21.prefetchNext]]): the writers' pages
   * are about 8 MB, and a larger page's first bytes are what its reader needs first.
   */
  val MaxPrefetch: Int = 16 << 20
}
