package sparklance.format.file.v2_1

import scala.jdk.CollectionConverters._
import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, FullZipLayout}
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding.CompressionCase._

/** Decodes a full-zip page (LANCE-FILE-2.1-2.2.md §6): control words zipped with whole values. */
private[v2_1] object FullZipPage {
  def decode(f: FullZipLayout, bufs: IndexedSeq[Slice], rows: Int, ctx: Ctx): PageData = {
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
    val defs = if (bitsDef > 0) new Array[Int](n) else null
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
        val offsets = new Array[Long](math.max(visibleN, 0) + 1)
        // Uncompressed values are at most the page's bytes: one allocation, where growing by
        // doubling would hold two copies of a page of large values at once.
        val out = new ByteSink(if (fsst == null && general == null) data.length else 64)
        var count = 0
        for (i <- 0 until n) {
          val d = control(i)
          if (d <= maxVisible) {
            if (count >= visibleN) throw ctx.corrupt(s"more than $visibleN visible items")
            if (d == 0) {
              need(lenBytes, s"the length of value $i")
              val len = Bytes.uN(data.array, p, lenBytes)
              p += lenBytes
              need(len, s"value $i")
              val from = p
              val to = p + len.toInt
              if (fsst != null) {
                val dl = fsst.decodedLength(data.array, from, to)
                out.ensure(dl)
                out.size = fsst.decodeInto(data.array, from, to, out.array, out.size)
              } else if (general != null) {
                val raw = Codecs.decompress(general, data.array, from, to - from, ctx)
                out.append(raw, 0, raw.length)
              } else out.append(data.array, from, to - from)
              p = to
            }
            count += 1
            offsets(count) = out.size
          }
        }
        if (count != visibleN) throw ctx.corrupt(s"$count visible items, the page says $visibleN")
        Slots.Variable(offsets, out.array, count)

      case _ => throw ctx.corrupt("full-zip page without a value width")
    }
    new PageData(rows, rep, defs, n, slots, layers, ctx)
  }

  private def flatBits(e: CompressiveEncoding, ctx: Ctx): Int = {
    if (e.getCompressionCase != FLAT) throw ctx.unsupported(s"${Compressive.name(e)} in a full-zip page")
    val b = e.getFlat.getBitsPerValue
    if (b <= 0 || b > (1 << 20)) throw ctx.corrupt(s"flat values of $b bits")
    b.toInt
  }
}
