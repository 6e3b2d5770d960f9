package sparklance.format.file.v2_1

import sparklance.format.proto.Encodings21Protos.CompressiveEncoding
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding.CompressionCase._

/**
 * Values of one mini-block chunk picked by index, decoding no more of the chunk than its encoding
 * requires: flat and variable-width values are copied alone, bit-packed ones unpacked alone, FSST
 * strings decompressed after picking; a general-compression (LZ4 / zstd) chunk is decompressed
 * first. Other encodings decode the whole chunk and pick from it.
 */
private[v2_1] object ChunkPicks {
  /** Values `idx(from until to)` (ascending) of the chunk's `n` values in buffers `bufs` encoded by `e`. */
  def pick(e: CompressiveEncoding, bufs: IndexedSeq[Slice], n: Int, idx: Array[Int], from: Int, to: Int, ctx: Ctx): Slots = {
    var i = from
    while (i < to) {
      if (idx(i) < 0 || idx(i) >= n) throw ctx.corrupt(s"value ${idx(i)} of a chunk of $n was asked for")
      i += 1
    }
    def buf0 = { if (bufs.isEmpty) throw ctx.corrupt("chunk without value buffers"); bufs(0) }
    e.getCompressionCase match {
      case FLAT if !e.getFlat.hasData =>
        val bits = Compressive.flatBits(e, ctx)
        Compressive.need(buf0, (n.toLong * bits + 7) / 8, ctx, s"$n $bits-bit values")
        flat(buf0, bits, idx, from, to)
      case INLINE_BITPACKING if !e.getInlineBitpacking.hasValues =>
        bitpacked(buf0, Compressive.checkWidth(e.getInlineBitpacking.getUncompressedBitsPerValue, ctx), n, idx, from, to, ctx)
      case VARIABLE => variable(buf0, Compressive.offsetBits(e.getVariable, ctx) / 8, n, idx, from, to, ctx)
      case GENERAL =>
        val g = e.getGeneral
        val raw = Codecs.decompress(g.getCompression, buf0.array, buf0.offset, buf0.length, ctx)
        val rest = bufs.updated(0, Slice.of(raw))
        pick(g.getValues, rest, n, idx, from, to, ctx)
      case FSST =>
        val f = e.getFsst
        pick(f.getValues, bufs, n, idx, from, to, ctx) match {
          case v: Slots.Variable => new Fsst(f.getSymbolTable.toByteArray, ctx).decode(v)
          case other => throw ctx.corrupt(s"FSST over ${Slots.kind(other)}")
        }
      case _ => Slots.pick(Compressive.chunk(e, bufs, n, ctx), idx, from, to, ctx)
    }
  }

  /** Flat values of `bits` bits (1 or whole bytes), copied one by one. */
  private def flat(s: Slice, bits: Int, idx: Array[Int], from: Int, to: Int): Slots.Fixed = {
    val k = to - from
    var i = 0
    if (bits == 1) {
      val out = new Array[Byte](Bytes.bytesForBits(k))
      while (i < k) { if (Bytes.getBit(s.array, s.offset * 8L + idx(from + i))) Bytes.setBit(out, i); i += 1 }
      Slots.Fixed(1, out, k)
    } else {
      val w = bits / 8
      val out = new Array[Byte](Math.multiplyExact(k, w))
      while (i < k) { System.arraycopy(s.array, s.offset + idx(from + i) * w, out, i * w, w); i += 1 }
      Slots.Fixed(bits, out, k)
    }
  }

  /** Inline bit-packed units `[w as t bits][1024·w/t words]`, the block of each picked value found by walking the widths. */
  private def bitpacked(s: Slice, t: Int, n: Int, idx: Array[Int], from: Int, to: Int, ctx: Ctx): Slots.Fixed = {
    val bytes = t / 8
    val out = new Array[Byte](Math.multiplyExact(to - from, bytes))
    var block = 0
    var at = s.offset
    var w = -1L
    def readWidth(): Unit = {
      Compressive.need(Slice(s.array, at, s.end - at), bytes, ctx, "a bit-packing width")
      w = Bytes.uN(s.array, at, bytes)
      if (w < 0 || w > t) throw ctx.corrupt(s"bit-packing width $w for $t-bit values")
      Compressive.need(Slice(s.array, at + bytes, s.end - at - bytes), 128 * w, ctx, s"a block of $w-bit packed values")
    }
    readWidth()
    var i = from
    while (i < to) {
      val target = idx(i) >>> 10
      while (block < target) { at += bytes + 128 * w.toInt; block += 1; readWidth() }
      val v = FastLanes.valueAt(s.array, at + bytes, w.toInt, t, idx(i) & 1023)
      Bytes.putN(out, (i - from) * bytes, bytes, v)
      i += 1
    }
    Slots.Fixed(t, out, to - from)
  }

  /** Variable-width values: `n + 1` offsets (from the buffer's start) then the bytes; only picked values' offsets are read. */
  private def variable(s: Slice, ob: Int, n: Int, idx: Array[Int], from: Int, to: Int, ctx: Ctx): Slots.Variable = {
    Compressive.need(s, (n + 1L) * ob, ctx, s"${n + 1} offsets")
    def offset(i: Int): Long = if (ob == 4) Bytes.u32(s.array, s.offset + i * 4) else Bytes.i64(s.array, s.offset + i * 8)
    val k = to - from
    val offsets = new Array[Long](k + 1)
    var i = 0
    while (i < k) {
      val (a, b) = (offset(idx(from + i)), offset(idx(from + i) + 1))
      if (a < 0 || b < a || b > s.length) throw ctx.corrupt(s"string offsets $a, $b outside their ${s.length}-byte chunk buffer")
      offsets(i + 1) = offsets(i) + (b - a)
      i += 1
    }
    val out = new Array[Byte](Math.toIntExact(offsets(k)))
    i = 0
    while (i < k) {
      val a = offset(idx(from + i))
      System.arraycopy(s.array, s.offset + a.toInt, out, offsets(i).toInt, (offsets(i + 1) - offsets(i)).toInt)
      i += 1
    }
    Slots.Variable(offsets, out, k)
  }
}
