package sparklance.format.file.v2_1

import scala.jdk.CollectionConverters._
import sparklance.format.Primitives
import sparklance.format.proto.Encodings21Protos.{BufferCompression, CompressionScheme, CompressiveEncoding, FixedSizeList,
  General, MiniBlockLayout, PageLayout}

/**
 * Mini-block pages (LANCE-FILE-2.1-2.2.md §5): the value slots are cut into chunks of 2^k values
 * (the last chunk holds the rest); each chunk carries the level entries up to its last slot, then
 * its value buffers. Buffers: chunk metadata words (u16 in 2.1, u32 in 2.2), chunks, and the
 * repetition index when there are lists.
 */
private[v2_1] object MiniBlockEncoder {
  private val MaxChunkValues = 4096
  private val TargetChunkBytes = 8186

  /**
   * The page, or None when some chunk cannot fit the format's limits (the caller uses full-zip).
   * `scratch`, when given, holds the chunks (cleared first): a buffer the caller reuses from page
   * to page, so it must write the page's buffers before encoding the next one.
   */
  def encode(s: PageSpan, minor: Int, packing: Boolean = true, scratch: Option[ByteSink] = None): Option[EncodedPage] = {
    val values = ChunkValues(s, packing)
    val large = minor >= 2
    val n = s.numSlots
    val visEnd = visibleEnds(s)
    val repLevels = if (s.rep != null) new Levels(s.rep, s.numEntries) else null
    val defLevels = if (s.defs != null) new Levels(s.defs, s.numEntries) else null
    val meta = new ByteSink(64)
    val chunks = scratch match {
      case Some(b) => b.clear(); b
      case None => new ByteSink(1 << 16)
    }
    val repIndex = if (s.rep != null) new ByteSink(64) else null
    var a = 0
    var e0 = 0
    while (a < n) {
      var c = values.cap(a, n)
      var done = false
      while (!done) {
        val last = a + c >= n
        val cnt = if (last) n - a else c
        val e1 = if (last) s.numEntries else visEnd(a + cnt - 1)
        val start = chunks.size
        if (writeChunk(chunks, s, repLevels, defLevels, values, a, a + cnt, e0, e1, large)) {
          val size = chunks.size - start
          val word = ((size / 8 - 1).toLong << 4) | (if (last) 0 else Integer.numberOfTrailingZeros(c))
          LE.uN(meta, word, if (large) 4 else 2)
          if (repIndex != null) {
            var rowsEnded = 0L
            var openStart = e0
            var i = e0 + 1
            while (i < e1) { if (s.rep(i) == s.maxRep) { rowsEnded += 1; openStart = i }; i += 1 }
            val endsHere = e1 == s.numEntries || s.rep(e1) == s.maxRep
            LE.u64(repIndex, if (endsHere) rowsEnded + 1 else rowsEnded)
            LE.u64(repIndex, if (endsHere) 0L else (e1 - openStart).toLong)
          }
          a += cnt
          e0 = e1
          done = true
        } else {
          chunks.size = start
          if (c <= values.minChunk) return if (values.compressed) encode(s, minor, packing = false, scratch) else None
          c /= 2
        }
      }
    }
    val b = MiniBlockLayout.newBuilder()
      .addAllLayers(s.layers.asJava)
      .setValueCompression(values.encoding)
      .setNumBuffers(values.numBuffers.toLong)
      .setNumItems(n.toLong)
    if (s.rep != null) b.setRepCompression(repLevels.encoding).setRepetitionIndexDepth(1)
    if (s.defs != null) b.setDefCompression(defLevels.encoding)
    if (large) b.setHasLargeChunk(true)
    val buffers = Seq(meta, chunks) ++ Option(repIndex)
    Some(EncodedPage(PageLayout.newBuilder().setMiniBlockLayout(b).build(), buffers))
  }

  /**
   * visEnd(k) = the entry index just after the k-th slot's entry. Its own method: a loop inside an
   * argument (such as `locally { ... }`) runs with a non-empty JVM operand stack, where it cannot
   * be compiled on-stack, and it runs once per page, so it would stay interpreted.
   */
  private def visibleEnds(s: PageSpan): Array[Int] = {
    val n = s.numSlots
    val visEnd = new Array[Int](n)
    var k = 0
    var i = 0
    while (i < s.numEntries) {
      if (s.visible(i)) {
        if (k >= n) throw new IllegalStateException(s"more visible entries than the page's $n value slots")
        visEnd(k) = i + 1
        k += 1
      }
      i += 1
    }
    if (k != n) throw new IllegalStateException(s"$k visible entries for $n slots")
    visEnd
  }

  /** Appends one chunk; false (with garbage appended) when it breaks a size limit. */
  private def writeChunk(out: ByteSink, s: PageSpan, repLevels: Levels, defLevels: Levels, values: ChunkValues,
      a: Int, b: Int, e0: Int, e1: Int, large: Boolean): Boolean = {
    val start = out.size
    val hasLevels = s.rep != null || s.defs != null
    val numLevels = e1 - e0
    if (hasLevels && numLevels > 0xffff) return false
    val rep = if (repLevels != null) repLevels.encode(e0, e1) else null
    val defs = if (defLevels != null) defLevels.encode(e0, e1) else null
    if ((rep != null && rep.size > 0xffff) || (defs != null && defs.size > 0xffff)) return false
    val bufs = values.write(a, b)
    val sizeBytes = if (large) 4 else 2
    if (!large && bufs.exists(_.size > 0xffff)) return false
    LE.u16(out, if (hasLevels) numLevels else 0)
    if (rep != null) LE.u16(out, rep.size)
    if (defs != null) LE.u16(out, defs.size)
    bufs.foreach(x => LE.uN(out, x.size.toLong, sizeBytes))
    LE.pad(out, start, 8, 0xfe)
    (Option(rep) ++ Option(defs) ++ bufs).foreach { x =>
      out.append(x.array, 0, x.size)
      LE.pad(out, start, 8, 0)
    }
    val size = out.size - start
    if (!large && size > 4096 * 8) false else size.toLong / 8 - 1 < (1L << 28)
  }

  /**
   * One level stream of the page: out-of-line bit-packed at the width of the page's largest
   * level (the form pylance writes), or raw u16 when that saves nothing. A chunk's levels are
   * valid until the next chunk's are encoded (see [[ChunkValues.write]]).
   */
  private final class Levels(levels: Array[Int], n: Int) {
    private val w = LE.bitLength(maxOf(levels, n).toLong)
    private val packed = w < 16
    val encoding: CompressiveEncoding = if (packed) BitPacking.outOfLineEncoding(16, w) else PageEncoding.flat(16)
    private val out = new ByteSink(256)
    def encode(from: Int, to: Int): ByteSink = {
      out.clear()
      if (packed) BitPacking.outOfLine(Primitives.longs(to - from)(i => levels(from + i).toLong), 0, to - from, w, 16, out)
      else { var i = from; while (i < to) { LE.u16(out, levels(i)); i += 1 }; }
      out
    }
  }

  /** How the value slots of a page are chunked and serialized. */
  private abstract class ChunkValues {
    def encoding: CompressiveEncoding
    /** The smallest chunk this encoding can cut (a non-last chunk). */
    def minChunk: Int = 1
    /** Whether the values are compressed; when a chunk cannot shrink the page is retried plain. */
    def compressed: Boolean = false
    def numBuffers: Int
    /** The chunk size (a power of two) for a chunk starting at slot a of n. */
    def cap(a: Int, n: Int): Int
    /**
     * The value buffers of slots [a, b) (page-relative), valid until the next call: each is a sink
     * of this object's, reused from chunk to chunk (a new array per chunk buffer, zeroed by the JVM
     * and then copied into the page, was 4% of an append's CPU).
     */
    def write(a: Int, b: Int): Seq[ByteSink]
  }

  /** A sink reused from chunk to chunk, emptied. */
  private def cleared(sink: ByteSink): ByteSink = { sink.clear(); sink }

  private def fixedCap(bits: Long): Int = {
    var c = MaxChunkValues
    while (c > 1 && c * bits > TargetChunkBytes * 8L) c /= 2
    c
  }

  private def ChunkValues(s: PageSpan, packing: Boolean): ChunkValues = {
    val base = s.slotFrom
    s.values match {
      case f: ValueSink.Fixed if packing && f.integer && f.width <= 8 && s.numSlots > 0 =>
        val packed = new BitPacked(f, base, s.numSlots)
        if (packed.pays) packed else ChunkValues(s, packing = false)
      case f: ValueSink.Fixed => new ChunkValues {
        val encoding = f.encoding
        val numBuffers = 1
        private val c = fixedCap(f.width * 8L)
        private val sink = new ByteSink(c * f.width)
        def cap(a: Int, n: Int) = c
        def write(a: Int, b: Int) = {
          val out = cleared(sink)
          out.append(f.data.array, (base + a) * f.width, (b - a) * f.width)
          Seq(out)
        }
      }
      case bools: ValueSink.Bools => new ChunkValues {
        val encoding = PageEncoding.flat(1)
        val numBuffers = 1
        private val sink = new ByteSink(MaxChunkValues / 8)
        def cap(a: Int, n: Int) = MaxChunkValues
        def write(a: Int, b: Int) = Seq(bits(bools.bits, (base + a).toLong, (b - a).toLong, sink))
      }
      case v: ValueSink.Variable if packing =>
        val plain = ChunkValues(s, packing = false)
        if (Lz4Chunks.pays(plain, s.numSlots)) new Lz4Chunks(plain) else plain
      case v: ValueSink.Variable => new ChunkValues {
        private val ob = if (v.large) 8 else 4
        val encoding = PageEncoding.variable(ob * 8)
        val numBuffers = 1
        private def bytes(a: Int, b: Int): Long = ob * (b - a + 1L) + v.offsets.array(base + b) - v.offsets.array(base + a)
        def cap(a: Int, n: Int) = {
          var c = 1
          while (c < MaxChunkValues && a + c < n && bytes(a, math.min(n, a + 2 * c)) <= 4096) c *= 2
          c
        }
        private val sink = new ByteSink(4096 + 8)
        def write(a: Int, b: Int) = {
          val out = cleared(sink)
          out.ensure(bytes(a, b) + 8)
          val first = v.offsets.array(base + a)
          val head = ob * (b - a + 1L)
          // `out` was sized for the chunk: the offsets go in without a capacity check each.
          var i = a
          while (i <= b) { Bytes.putN(out.array, out.size, ob, head + v.offsets.array(base + i) - first); out.size += ob; i += 1 }
          val len = (v.offsets.array(base + b) - first).toInt
          out.append(v.data.array, first.toInt, len)
          LE.pad(out, 0, ob, 0x48)
          Seq(out)
        }
      }
      case l: ValueSink.FixedSizeList => new ChunkValues {
        private val hasValidity = FullZipEncoder.hasNullItems(l, s)
        val encoding = CompressiveEncoding.newBuilder().setFixedSizeList(FixedSizeList.newBuilder()
          .setItemsPerValue(l.dim.toLong).setHasValidity(hasValidity).setValues(PageEncoding.flat(l.itemBits))).build()
        val numBuffers = if (hasValidity) 2 else 1
        private val c = fixedCap(l.dim.toLong * l.itemBits)
        private val dataSink = new ByteSink(64)
        private val validitySink = new ByteSink(64)
        def cap(a: Int, n: Int) = c
        def write(a: Int, b: Int) = {
          val d = l.dim.toLong
          val data =
            if (l.itemBits == 1) bits(l.itemBools, (base + a) * d, (b - a) * d, dataSink)
            else { val out = cleared(dataSink); out.append(l.data.array, (base + a) * l.slotBytes, (b - a) * l.slotBytes); out }
          if (hasValidity) Seq(bits(l.validity, (base + a) * d, (b - a) * d, validitySink), data) else Seq(data)
        }
      }
      case other => throw new IllegalStateException(s"no mini-block values for ${other.getClass.getSimpleName}")
    }
  }

  /**
   * General LZ4 compression of each chunk's value buffer (LANCE-FILE-2.1-2.2.md §9.6): a u32
   * uncompressed size and an LZ4 block, around the values `inner` writes.
   */
  private final class Lz4Chunks(inner: ChunkValues) extends ChunkValues {
    val encoding = CompressiveEncoding.newBuilder().setGeneral(General.newBuilder()
      .setCompression(BufferCompression.newBuilder().setScheme(CompressionScheme.COMPRESSION_ALGORITHM_LZ4))
      .setValues(inner.encoding)).build()
    val numBuffers = 1
    override def compressed = true
    private val sink = new ByteSink(64)
    def cap(a: Int, n: Int) = inner.cap(a, n)
    def write(a: Int, b: Int) = Seq(Lz4Chunks.compress(inner.write(a, b).head, sink))
  }

  private object Lz4Chunks {
    private lazy val lz4 = net.jpountz.lz4.LZ4Factory.fastestInstance().fastCompressor()

    /** `raw` compressed into `out` (emptied first), behind its u32 size. */
    def compress(raw: ByteSink, out: ByteSink): ByteSink = {
      out.clear()
      out.ensure(4L + lz4.maxCompressedLength(raw.size))
      LE.u32(out, raw.size.toLong)
      out.size += lz4.compress(raw.array, 0, raw.size, out.array, out.size, out.array.length - out.size)
      out
    }

    /** Whether the first chunks shrink by a quarter or more. */
    def pays(values: ChunkValues, n: Int): Boolean = {
      var raw = 0L
      var packed = 0L
      var a = 0
      var k = 0
      val out = new ByteSink(64)
      while (a < n && k < 8) {
        val b = math.min(n, a + values.cap(a, n))
        val buf = values.write(a, b).head
        raw += buf.size
        packed += compress(buf, out).size
        a = b
        k += 1
      }
      raw >= 1024 && packed * 4 <= raw * 3
    }
  }

  /**
   * Integers inline bit-packed in chunks of 1024 (the last one shorter). The values as longs and
   * each chunk's bit width are computed once per page, for the choice and for the chunks alike.
   */
  private final class BitPacked(f: ValueSink.Fixed, base: Int, n: Int) extends ChunkValues {
    private val t = f.width * 8
    private val longs = Bytes.uNs(f.data.array, base * f.width, n, f.width)
    private val widths = Array.tabulate((n + 1023) / 1024)(k => BitPacking.width(longs, k * 1024, math.min(n, k * 1024 + 1024), t))
    /** Whether inline bit-packing saves at least a tenth of the flat size of the page's values. */
    def pays: Boolean = widths.map(w => t / 8 + 128L * w).sum * 10 < n.toLong * f.width * 9
    val encoding = BitPacking.inlineEncoding(t)
    val numBuffers = 1
    override def minChunk = 1024
    override def compressed = true
    def cap(a: Int, n: Int) = 1024
    private val sink = new ByteSink(t / 8 + 128 * t)
    def write(a: Int, b: Int) = {
      val out = cleared(sink)
      // Chunks start at multiples of 1024 (minChunk = cap), so slot a's chunk width is known.
      val w = if (a % 1024 == 0 && b == math.min(n, a + 1024)) widths(a / 1024) else BitPacking.width(longs, a, b, t)
      BitPacking.inlineChunk(longs, a, b - a, t, w, out)
      Seq(out)
    }
  }

  private def maxOf(levels: Array[Int], n: Int): Int = {
    var m = 0
    var i = 0
    while (i < n) { if (levels(i) > m) m = levels(i); i += 1 }
    m
  }

  /** Bits [from, from + n) of `src` into `out`, emptied first. */
  private def bits(src: BitSink, from: Long, n: Long, out: ByteSink): ByteSink = {
    val b = new BitSink(n.toInt)
    b.appendBits(src.array, from, n)
    cleared(out).append(b.array, 0, Bytes.bytesForBits(n))
    out
  }
}
