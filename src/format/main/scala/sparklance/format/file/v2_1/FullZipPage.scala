package sparklance.format.file.v2_1

import scala.jdk.CollectionConverters._
import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, FullZipLayout}
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding.CompressionCase._

/** Decodes a full-zip page (LANCE-FILE-2.1-2.2.md §6): control words zipped with whole values. */
private[v2_1] object FullZipPage {
  /**
   * The page's rows; of a page of variable-width values without repetition (each item a row), only
   * the first ones whose values decode to at most `maxBytes` (value bytes plus 8 a value, as Arrow
   * holds them): decoding stops before the row that would pass it, which is decoded anyway when it
   * is the first and `atLeastOne`. The decoded page then has fewer rows than `rows`.
   */
  def decode(f: FullZipLayout, bufs: IndexedSeq[Slice], rows: Int, ctx: Ctx, maxBytes: Long = Long.MaxValue,
      atLeastOne: Boolean = true): PageData = {
    val layers = new Layers(f.getLayersList.asScala.toIndexedSeq, ctx)
    if (bufs.isEmpty) throw ctx.corrupt("full-zip page without buffers")
    val data = bufs(0)
    val bitsRep = f.getBitsRep
    val bitsDef = f.getBitsDef
    if (bitsRep < 0 || bitsDef < 0 || bitsRep + bitsDef > 32) throw ctx.corrupt(s"control words of $bitsRep + $bitsDef bits")
    val cw = bitsRep + bitsDef match { case 0 => 0; case b if b <= 8 => 1; case b if b <= 16 => 2; case _ => 4 }
    val n = f.getNumItems
    if (n < 0) throw ctx.corrupt(s"$n items")
    val visibleN = f.getNumVisibleItems
    val rep = if (bitsRep > 0) new Array[Int](n) else null
    var defs = if (bitsDef > 0) new Array[Int](n) else null
    // Items decoded: all n, unless a byte budget cut the page.
    var items = n
    val defMask = if (bitsDef >= 32) -1 else (1 << bitsDef) - 1
    val enc = f.getValueCompression
    val maxVisible = layers.maxVisibleDef
    var p = data.offset
    val end = data.end
    def need(len: Long, what: => String): Unit = if (len > end - p) throw ctx.corrupt(s"$what runs past the page data")
    def control(i: Int): Int = {
      need(cw, s"control word $i")
      val w = Bytes.uN(data.array, p, cw).toInt
      p += cw
      if (rep != null) rep(i) = w >>> bitsDef
      if (defs != null) defs(i) = w & defMask
      if (defs != null) defs(i) else 0
    }
    val slots: Slots = f.getDetailsCase match {
      case FullZipLayout.DetailsCase.BITS_PER_VALUE =>
        val bits = f.getBitsPerValue
        val (dim, hasValidity, itemBits) = enc.getCompressionCase match {
          case FLAT => (0, false, flatBits(enc, ctx))
          case FIXED_SIZE_LIST =>
            val l = enc.getFixedSizeList
            if (l.getItemsPerValue <= 0 || l.getItemsPerValue > (1 << 24)) throw ctx.corrupt(s"fixed-size list of ${l.getItemsPerValue}")
            (l.getItemsPerValue.toInt, l.getHasValidity, flatBits(l.getValues, ctx))
          case _ => throw ctx.unsupported(s"${Compressive.name(enc)} in a full-zip page")
        }
        if (itemBits % 8 != 0) throw ctx.unsupported(s"$itemBits-bit values in a full-zip page")
        val validityBytes = if (hasValidity) (dim + 7) / 8 else 0
        val valueBytes = validityBytes + math.max(dim, 1) * itemBits / 8
        if (valueBytes * 8L != bits) throw ctx.corrupt(s"full-zip values of $bits bits, the encoding says ${valueBytes * 8}")
        val validity = if (hasValidity) new BitSink(visibleN * dim) else null
        var count = 0
        val values: Array[Byte] =
          if (cw == 0 && !hasValidity) {
            // No control words and no item validity (vectors without nulls): the values lie back to
            // back, so the page's own read buffer is the values when it holds nothing else, and one
            // copy for the page otherwise (never one per value).
            val bytes = Math.toIntExact(n.toLong * valueBytes)
            need(bytes, s"$n values")
            count = n
            val v = if (p == 0 && bytes == data.array.length) data.array else java.util.Arrays.copyOfRange(data.array, p, p + bytes)
            p += bytes
            v
          } else {
            val out = new ByteSink(visibleN * (valueBytes - validityBytes))
            for (i <- 0 until n) {
              val d = control(i)
              if (d <= maxVisible) {
                need(valueBytes, s"value $i")
                if (hasValidity) validity.appendBits(data.array, p * 8L, dim)
                out.append(data.array, p + validityBytes, valueBytes - validityBytes)
                p += valueBytes
                count += 1
              }
            }
            out.array
          }
        if (dim == 0) Slots.Fixed(itemBits, values, count)
        else Slots.FixedSizeList(dim, if (hasValidity) validity.array else null, Slots.Fixed(itemBits, values, count * dim), count)

      case FullZipLayout.DetailsCase.BITS_PER_OFFSET =>
        val lenBytes = f.getBitsPerOffset match {
          case 32 => 4
          case 64 => 8
          case b => throw ctx.corrupt(s"full-zip lengths of $b bits")
        }
        // The per-value transformation: none, FSST, or general compression of each value.
        val (fsst, general) = enc.getCompressionCase match {
          // Each value's fields, packed after one another (2.2 blob v2 descriptors): kept as the
          // value's bytes, for the reader of that field to take apart.
          case VARIABLE | VARIABLE_PACKED_STRUCT => (null, null)
          case FSST => (new Fsst(enc.getFsst.getSymbolTable.toByteArray, ctx), null)
          case GENERAL =>
            if (enc.getGeneral.getValues.getCompressionCase != VARIABLE)
              throw ctx.unsupported(s"general compression over ${Compressive.name(enc.getGeneral.getValues)} in a full-zip page")
            (null, enc.getGeneral.getCompression)
          case _ => throw ctx.unsupported(s"${Compressive.name(enc)} in a full-zip page")
        }
        // First each value's place and decoded length, from the headers alone: the values that are
        // decoded then go into one array of their exact size.
        val numSlots = math.max(visibleN, 0)
        val offsets = new Array[Long](numSlots + 1)
        val valueAt = new Array[Int](numSlots)
        val storedLength = new Array[Int](numSlots)
        val budgeted = bitsRep == 0 && maxBytes < Long.MaxValue
        var used = 0L
        var count = 0
        var i = 0
        var cut = false
        while (i < n && !cut) {
          val itemStart = p
          val d = control(i)
          if (d <= maxVisible) {
            if (count >= visibleN) throw ctx.corrupt(s"more than $visibleN visible items")
            var length = 0L
            valueAt(count) = -1
            if (d == 0) {
              need(lenBytes, s"the length of value $i")
              val len = Bytes.uN(data.array, p, lenBytes)
              p += lenBytes
              need(len, s"value $i")
              length =
                if (fsst != null) fsst.decodedLength(data.array, p, p + len.toInt)
                else if (general != null) Codecs.decompressedSize(general, data.array, p, len.toInt, ctx)
                else len
              valueAt(count) = p
              storedLength(count) = len.toInt
              p += len.toInt
            }
            if (budgeted && (count > 0 || !atLeastOne) && used + length + 8 > maxBytes) { cut = true; p = itemStart }
            else {
              used += length + 8
              offsets(count + 1) = offsets(count) + length
              count += 1
            }
          }
          if (!cut) i += 1
        }
        if (!cut && count != visibleN) throw ctx.corrupt(s"$count visible items, the page says $visibleN")
        if (offsets(count) > Int.MaxValue - 16) throw ctx.unsupported(
          s"${offsets(count)} bytes of values in one page; sparklance decodes at most 2 GiB of a page at once")
        val out = new Array[Byte](offsets(count).toInt)
        var k = 0
        while (k < count) {
          val at = valueAt(k)
          val to = offsets(k).toInt
          if (at >= 0) {
            if (fsst != null) fsst.decodeInto(data.array, at, at + storedLength(k), out, to)
            else if (general != null) Codecs.decompressInto(general, data.array, at, storedLength(k), out, to, ctx)
            else System.arraycopy(data.array, at, out, to, storedLength(k))
          }
          k += 1
        }
        if (cut) {
          items = i
          if (defs != null) defs = java.util.Arrays.copyOf(defs, i)
        }
        Slots.Variable(if (cut) java.util.Arrays.copyOf(offsets, count + 1) else offsets, out, count)

      case _ => throw ctx.corrupt("full-zip page without a value width")
    }
    new PageData(if (items < n) items else rows, rep, defs, items, slots, layers, ctx)
  }

  private def flatBits(e: CompressiveEncoding, ctx: Ctx): Int = {
    if (e.getCompressionCase != FLAT) throw ctx.unsupported(s"${Compressive.name(e)} in a full-zip page")
    val b = e.getFlat.getBitsPerValue
    if (b <= 0 || b > (1 << 20)) throw ctx.corrupt(s"flat values of $b bits")
    b.toInt
  }
}
