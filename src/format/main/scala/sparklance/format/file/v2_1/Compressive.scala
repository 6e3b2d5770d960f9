package sparklance.format.file.v2_1

import sparklance.format.Primitives
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding.CompressionCase._

/** A view of `length` bytes of `array` from `offset`. */
private[v2_1] final case class Slice(array: Array[Byte], offset: Int, length: Int) {
  def end: Int = offset + length
}

private[v2_1] object Slice {
  def of(a: Array[Byte]): Slice = Slice(a, 0, a.length)
}

/**
 * Decoders of the compressive-encoding tree (LANCE-FILE-2.1-2.2.md §3.2, §9) in its two
 * serializations: the mini-block chunk form (`chunk`: one chunk's value buffers, count known) and
 * the block form (`block`: levels and dictionary items, one buffer).
 */
private[v2_1] object Compressive {
  def name(e: CompressiveEncoding): String = e.getCompressionCase match {
    case COMPRESSION_NOT_SET => "an unset compressive encoding"
    case c => s"the ${c.name.toLowerCase} compressive encoding"
  }

  private[v2_1] def flatBits(e: CompressiveEncoding, ctx: Ctx): Int = {
    if (e.getCompressionCase != FLAT) throw ctx.unsupported(s"${name(e)} where a flat encoding was expected")
    val f = e.getFlat
    if (f.hasData) throw ctx.unsupported("a flat encoding with buffer compression")
    val b = f.getBitsPerValue
    if (b != 1 && (b <= 0 || b % 8 != 0 || b > (1L << 20))) throw ctx.corrupt(s"flat encoding of $b bits per value")
    b.toInt
  }

  private[v2_1] def need(s: Slice, bytes: Long, ctx: Ctx, what: => String): Unit =
    if (bytes > s.length) throw ctx.corrupt(s"$what needs $bytes bytes, its buffer has ${s.length}")

  private def flat(s: Slice, bits: Int, n: Int, ctx: Ctx): Slots.Fixed = {
    val bytes = (n.toLong * bits + 7) / 8
    need(s, bytes, ctx, s"$n $bits-bit values")
    Slots.Fixed(bits, java.util.Arrays.copyOfRange(s.array, s.offset, s.offset + bytes.toInt), n)
  }

  private[v2_1] def checkWidth(t: Long, ctx: Ctx): Int =
    if (t == 8 || t == 16 || t == 32 || t == 64) t.toInt else throw ctx.corrupt(s"bit-packing of $t-bit values")

  /** Inline bitpacking units `[W as T bits][1024·W/T words]` for n values, from s. */
  private def inlineBitpacked(s: Slice, t: Int, n: Int, ctx: Ctx): (Slots.Fixed, Int) = {
    val out = new Array[Byte](Math.multiplyExact(n, t / 8))
    val used = inlineBitpackedInto(s, t, n, out, 0, ctx)
    (Slots.Fixed(t, out, n), used)
  }

  /**
   * The value width of chunks whose pages can decode every chunk straight into one array for the
   * page ([[chunkInto]]): plain inline bit-packing (the usual encoding of integers and dictionary
   * indices) and flat values of whole bytes (floats, decimals).
   */
  def pageArrayWidth(e: CompressiveEncoding, ctx: Ctx): Option[Int] = e.getCompressionCase match {
    case INLINE_BITPACKING if !e.getInlineBitpacking.hasValues => Some(checkWidth(e.getInlineBitpacking.getUncompressedBitsPerValue, ctx))
    case FLAT if !e.getFlat.hasData => Some(flatBits(e, ctx)).filter(_ % 8 == 0)
    case _ => None
  }

  /** Decodes one chunk's n values of width t (see [[pageArrayWidth]]) from s into `out` at value `outIndex`. */
  def chunkInto(e: CompressiveEncoding, s: Slice, t: Int, n: Int, out: Array[Byte], outIndex: Int, ctx: Ctx): Unit =
    if (e.getCompressionCase == FLAT) {
      val bytes = n.toLong * (t / 8)
      need(s, bytes, ctx, s"$n $t-bit values")
      if ((outIndex.toLong + n) * (t / 8) > out.length) throw ctx.corrupt(s"$n values past the page's ${out.length / (t / 8)}")
      System.arraycopy(s.array, s.offset, out, outIndex * (t / 8), bytes.toInt)
    } else inlineBitpackedInto(s, t, n, out, outIndex, ctx)

  /** Unpacks n inline bit-packed values of width t from s into `out` at value `outIndex`; returns the bytes of s used. */
  def inlineBitpackedInto(s: Slice, t: Int, n: Int, out: Array[Byte], outIndex: Int, ctx: Ctx): Int = {
    val bytes = t / 8
    if ((outIndex.toLong + n) * bytes > out.length) throw ctx.corrupt(s"$n bit-packed values past the page's ${out.length / bytes}")
    var at = s.offset
    var done = 0
    while (done < n) {
      need(Slice(s.array, at, s.end - at), bytes, ctx, "a bit-packing width")
      val w = Bytes.uN(s.array, at, bytes)
      if (w < 0 || w > t) throw ctx.corrupt(s"bit-packing width $w for $t-bit values")
      at += bytes
      val blk = 128 * w.toInt
      need(Slice(s.array, at, s.end - at), blk, ctx, s"a block of $w-bit packed values")
      FastLanes.unpack(s.array, at, w.toInt, t, math.min(1024, n - done), out, outIndex + done)
      at += blk
      done += 1024
    }
    at - s.offset
  }

  private def unsplit(s: Slots.Fixed, ctx: Ctx): Slots.Fixed = {
    val w = s.bytesPer
    val n = s.count
    val out = new Array[Byte](s.data.length)
    var k = 0
    while (k < w) {
      var i = 0
      while (i < n) { out(i * w + k) = s.data(k * n + i); i += 1 }
      k += 1
    }
    Slots.Fixed(s.bits, out, n)
  }

  private def rle(values: Slice, lengths: Slice, vbits: Int, n: Int, ctx: Ctx): Slots.Fixed = {
    val w = vbits / 8
    val runs = lengths.length
    need(values, runs.toLong * w, ctx, s"$runs run values")
    val out = new Array[Byte](Math.multiplyExact(n, w))
    var pos = 0
    var r = 0
    while (r < runs && pos < n) {
      val len = math.min(lengths.array(lengths.offset + r) & 0xff, n - pos)
      var j = 0
      while (j < len) { System.arraycopy(values.array, values.offset + r * w, out, (pos + j) * w, w); j += 1 }
      pos += len
      r += 1
    }
    if (pos != n) throw ctx.corrupt(s"run lengths add up to $pos values, $n expected")
    Slots.Fixed(vbits, out, n)
  }

  private def variableChunk(s: Slice, offsetBits: Int, n: Int, ctx: Ctx): Slots.Variable = {
    val ob = offsetBits / 8
    need(s, (n + 1L) * ob, ctx, s"${n + 1} offsets")
    val offsets = new Array[Long](n + 1)
    var i = 0
    while (i <= n) {
      val o = if (ob == 4) Bytes.u32(s.array, s.offset + i * 4) else Bytes.i64(s.array, s.offset + i * 8)
      if (o < 0 || o > s.length || (i > 0 && s.offset + o < offsets(i - 1)))
        throw ctx.corrupt(s"string offset $o outside its ${s.length}-byte chunk buffer")
      // Offsets into the chunk's own array (the values are not copied out of it; concatenating or
      // loading the page's values copies them once).
      offsets(i) = s.offset + o
      i += 1
    }
    Slots.Variable(offsets, s.array, n)
  }

  private[v2_1] def offsetBits(v: sparklance.format.proto.Encodings21Protos.Variable, ctx: Ctx): Int = {
    if (v.hasValues) throw ctx.unsupported("a variable encoding with buffer compression")
    val b = flatBits(v.getOffsets, ctx)
    if (b != 32 && b != 64) throw ctx.corrupt(s"variable encoding with $b-bit offsets")
    b
  }

  // Once per chunk of a few thousand values: plain arrays, because ArraySeq's drop and +: look
  // up a ClassTag each time, which a JFR profile showed as a fifth of a scan's time.
  private def withFirst(bufs: IndexedSeq[Slice], first: Slice): IndexedSeq[Slice] = {
    val a = new Array[Slice](math.max(1, bufs.size))
    a(0) = first
    var i = 1
    while (i < a.length) { a(i) = bufs(i); i += 1 }
    scala.collection.immutable.ArraySeq.unsafeWrapArray(a)
  }

  private def afterFirst(bufs: IndexedSeq[Slice]): IndexedSeq[Slice] = {
    val a = new Array[Slice](math.max(0, bufs.size - 1))
    var i = 0
    while (i < a.length) { a(i) = bufs(i + 1); i += 1 }
    scala.collection.immutable.ArraySeq.unsafeWrapArray(a)
  }

  /** Decodes n values of one mini-block chunk whose value buffers are `bufs`. */
  def chunk(e: CompressiveEncoding, bufs: IndexedSeq[Slice], n: Int, ctx: Ctx): Slots = {
    def buf0 = { if (bufs.isEmpty) throw ctx.corrupt("chunk without value buffers"); bufs(0) }
    e.getCompressionCase match {
      case FLAT => flat(buf0, flatBits(e, ctx), n, ctx)
      case INLINE_BITPACKING =>
        if (e.getInlineBitpacking.hasValues) throw ctx.unsupported("inline bit-packing with buffer compression")
        inlineBitpacked(buf0, checkWidth(e.getInlineBitpacking.getUncompressedBitsPerValue, ctx), n, ctx)._1
      case VARIABLE => variableChunk(buf0, offsetBits(e.getVariable, ctx), n, ctx)
      case FSST =>
        val f = e.getFsst
        chunk(f.getValues, bufs, n, ctx) match {
          case v: Slots.Variable => new Fsst(f.getSymbolTable.toByteArray, ctx).decode(v)
          case other => throw ctx.corrupt(s"FSST over ${Slots.kind(other)}")
        }
      case RLE =>
        if (bufs.size < 2) throw ctx.corrupt("RLE chunk without its run-length buffer")
        if (flatBits(e.getRle.getRunLengths, ctx) != 8) throw ctx.unsupported("RLE with run lengths wider than 8 bits")
        val vb = flatBits(e.getRle.getValues, ctx)
        if (vb % 8 != 0) throw ctx.unsupported(s"RLE of $vb-bit values")
        rle(bufs(0), bufs(1), vb, n, ctx)
      case GENERAL =>
        val g = e.getGeneral
        val raw = Codecs.decompress(g.getCompression, buf0.array, buf0.offset, buf0.length, ctx)
        chunk(g.getValues, Compressive.withFirst(bufs, Slice.of(raw)), n, ctx)
      case BYTE_STREAM_SPLIT =>
        chunk(e.getByteStreamSplit.getValues, bufs, n, ctx) match {
          case f: Slots.Fixed if f.bits % 8 == 0 => unsplit(f, ctx)
          case other => throw ctx.corrupt(s"byte-stream-split over ${Slots.kind(other)}")
        }
      case FIXED_SIZE_LIST =>
        val l = e.getFixedSizeList
        val dim = l.getItemsPerValue
        if (dim <= 0 || dim > Int.MaxValue) throw ctx.corrupt(s"fixed-size list of $dim items")
        val items = Math.multiplyExact(n, dim.toInt)
        if (l.getHasValidity) {
          if (bufs.size < 2) throw ctx.corrupt("fixed-size list chunk without its validity buffer")
          need(bufs(0), Bytes.bytesForBits(items), ctx, s"validity of $items items")
          val validity = java.util.Arrays.copyOfRange(bufs(0).array, bufs(0).offset, bufs(0).offset + Bytes.bytesForBits(items))
          chunk(l.getValues, Compressive.afterFirst(bufs), items, ctx) match {
            case f: Slots.Fixed => Slots.FixedSizeList(dim.toInt, validity, f, n)
            case other => throw ctx.unsupported(s"fixed-size lists of ${Slots.kind(other)}")
          }
        } else chunk(l.getValues, bufs, items, ctx) match {
          case f: Slots.Fixed => Slots.FixedSizeList(dim.toInt, null, f, n)
          case other => throw ctx.unsupported(s"fixed-size lists of ${Slots.kind(other)}")
        }
      case PACKED_STRUCT =>
        val p = e.getPackedStruct
        chunk(p.getValues, bufs, n, ctx) match {
          case f: Slots.Fixed if f.bits == p.getBitsPerValueList.stream().mapToLong(_.longValue).sum() => f
          case other => throw ctx.corrupt(s"packed struct over ${Slots.kind(other)}")
        }
      case _ => throw ctx.unsupported(name(e))
    }
  }

  /** Decodes a whole block-form buffer into `n` values (n = -1: as many as the block holds). */
  def block(e: CompressiveEncoding, s: Slice, n: Int, ctx: Ctx): Slots = e.getCompressionCase match {
    case FLAT =>
      val bits = flatBits(e, ctx)
      flat(s, bits, if (n >= 0) n else Math.toIntExact(s.length * 8L / bits), ctx)
    case INLINE_BITPACKING =>
      if (n < 0) throw ctx.corrupt("inline bit-packed block of unknown length")
      inlineBitpacked(s, checkWidth(e.getInlineBitpacking.getUncompressedBitsPerValue, ctx), n, ctx)._1
    case OUT_OF_LINE_BITPACKING =>
      if (n < 0) throw ctx.corrupt("bit-packed block of unknown length")
      val o = e.getOutOfLineBitpacking
      val t = checkWidth(o.getUncompressedBitsPerValue, ctx)
      if (o.getValues.getCompressionCase != FLAT) throw ctx.unsupported(s"out-of-line bit-packing over ${name(o.getValues)}")
      val w = o.getValues.getFlat.getBitsPerValue.toInt
      if (w < 0 || w > t) throw ctx.corrupt(s"$w-bit packing of $t-bit values")
      val bytes = t / 8
      val out = new Array[Byte](Math.multiplyExact(n, bytes))
      val blk = 128 * w
      val full = n / 1024
      need(s, full.toLong * blk, ctx, s"$full packed blocks")
      var b = 0
      while (b < full) { FastLanes.unpack(s.array, s.offset + b * blk, w, t, 1024, out, b * 1024); b += 1 }
      val tail = n - full * 1024
      if (tail > 0) {
        val rest = s.length - full * blk
        if (rest == tail * bytes) System.arraycopy(s.array, s.offset + full * blk, out, full * 1024 * bytes, tail * bytes)
        else {
          need(Slice(s.array, s.offset + full * blk, rest), blk, ctx, "the padded last packed block")
          FastLanes.unpack(s.array, s.offset + full * blk, w, t, tail, out, full * 1024)
        }
      }
      Slots.Fixed(t, out, n)
    case RLE =>
      need(s, 8, ctx, "an RLE block header")
      val vlen = Bytes.i64(s.array, s.offset)
      if (vlen < 0 || vlen > s.length - 8) throw ctx.corrupt(s"RLE block with $vlen bytes of values in ${s.length}")
      if (flatBits(e.getRle.getRunLengths, ctx) != 8) throw ctx.unsupported("RLE with run lengths wider than 8 bits")
      val vb = flatBits(e.getRle.getValues, ctx)
      if (vb % 8 != 0) throw ctx.unsupported(s"RLE of $vb-bit values")
      val values = Slice(s.array, s.offset + 8, vlen.toInt)
      val lengths = Slice(s.array, values.end, s.length - 8 - vlen.toInt)
      val count = if (n >= 0) n else { var c = 0; var i = 0; while (i < lengths.length) { c += lengths.array(lengths.offset + i) & 0xff; i += 1 }; c }
      rle(values, Slice(lengths.array, lengths.offset, math.min(lengths.length, (vlen / (vb / 8)).toInt)), vb, count, ctx)
    case VARIABLE =>
      val ob = offsetBits(e.getVariable, ctx) / 8
      need(s, 2L * ob, ctx, "a variable block header")
      val declared = Bytes.uN(s.array, s.offset, ob)
      if (declared != ob * 8) throw ctx.corrupt(s"variable block declares $declared-bit offsets, expected ${ob * 8}")
      val dataStart = Bytes.uN(s.array, s.offset + ob, ob)
      if (dataStart < 3 * ob || dataStart > s.length || (dataStart - 2 * ob) % ob != 0)
        throw ctx.corrupt(s"variable block with data at $dataStart of ${s.length}")
      val count = ((dataStart - 2 * ob) / ob - 1).toInt
      if (n >= 0 && n != count) throw ctx.corrupt(s"variable block of $count values, $n expected")
      val offsets = Primitives.longs(count + 1)(i => Bytes.uN(s.array, s.offset + (2 + i) * ob, ob))
      for (i <- 0 to count)
        if (offsets(i) < 0 || offsets(i) > s.length - dataStart || (i > 0 && offsets(i) < offsets(i - 1)))
          throw ctx.corrupt(s"variable block offset ${offsets(i)} out of range")
      Slots.Variable(offsets, java.util.Arrays.copyOfRange(s.array, s.offset + dataStart.toInt, s.end), count)
    case FSST =>
      block(e.getFsst.getValues, s, n, ctx) match {
        case v: Slots.Variable => new Fsst(e.getFsst.getSymbolTable.toByteArray, ctx).decode(v)
        case other => throw ctx.corrupt(s"FSST over ${Slots.kind(other)}")
      }
    case GENERAL =>
      val raw = Codecs.decompress(e.getGeneral.getCompression, s.array, s.offset, s.length, ctx)
      block(e.getGeneral.getValues, Slice.of(raw), n, ctx)
    case BYTE_STREAM_SPLIT =>
      block(e.getByteStreamSplit.getValues, s, n, ctx) match {
        case f: Slots.Fixed if f.bits % 8 == 0 => unsplit(f, ctx)
        case other => throw ctx.corrupt(s"byte-stream-split over ${Slots.kind(other)}")
      }
    case _ => throw ctx.unsupported(name(e))
  }

  /** Rep or def levels of a block-form buffer as ints. */
  def levels(e: CompressiveEncoding, s: Slice, n: Int, ctx: Ctx): Array[Int] = {
    if (n == 0) return Array.emptyIntArray
    block(e, s, n, ctx) match {
      case f: Slots.Fixed if f.bits % 8 == 0 && f.bits <= 32 =>
        val w = f.bytesPer
        Primitives.ints(n)(i => Bytes.uN(f.data, i * w, w).toInt)
      case other => throw ctx.corrupt(s"levels decoded to ${Slots.kind(other)}")
    }
  }

  /** Raw u16 levels (all-null and constant pages without a level encoding). */
  def rawLevels(s: Slice): Array[Int] = Primitives.ints(s.length / 2)(i => Bytes.u16(s.array, s.offset + 2 * i))
}
