package sparklance.format.file.v2_1

import scala.jdk.CollectionConverters._
import sparklance.format.UnsupportedFeatureException
import sparklance.format.proto.Encodings21Protos.{CompressiveEncoding, FixedSizeList, FullZipLayout, PageLayout}

/**
 * Full-zip pages (LANCE-FILE-2.1-2.2.md §6): each level entry is a control word (rep, def)
 * followed by its value when it has a slot, plus a repetition index of row start offsets.
 */
private[v2_1] object FullZipEncoder {
  def encode(s: PageSpan, column: String): EncodedPage = {
    val bitsRep = LE.bitLength(s.maxRep)
    val bitsDef = LE.bitLength(s.maxDef)
    val cw = bitsRep + bitsDef match { case 0 => 0; case b if b <= 8 => 1; case b if b <= 16 => 2; case _ => 4 }
    val b = FullZipLayout.newBuilder().setBitsRep(bitsRep).setBitsDef(bitsDef)
      .setNumItems(s.numEntries).setNumVisibleItems(s.numSlots).addAllLayers(s.layers.asJava)
    // Sized for the page up front: growing by doubling would copy a page of large values several times.
    val data = new ByteSink(FullZipEncoder.estimatedBytes(s, cw))
    val starts = new LongSink(s.rows + 1)
    // How to write slot j: fixed-width values always; variable ones only when valid (def 0).
    val (writeSlot, variable): ((Int, Int) => Unit, Boolean) = s.values match {
      case f: ValueSink.Fixed =>
        b.setBitsPerValue(f.width * 8).setValueCompression(f.encoding)
        ((j: Int, _: Int) => data.append(f.data.array, j * f.width, f.width), false)
      case v: ValueSink.Variable =>
        val ob = if (v.large) 8 else 4
        b.setBitsPerOffset(ob * 8).setValueCompression(PageEncoding.variable(ob * 8))
        ((j: Int, d: Int) => if (d == 0) {
          val from = v.offsets.array(j)
          val len = (v.offsets.array(j + 1) - from).toInt
          LE.uN(data, len.toLong, ob)
          data.append(v.data.array, from.toInt, len)
        }, true)
      case l: ValueSink.FixedSizeList if l.itemBits % 8 == 0 =>
        val hasValidity = hasNullItems(l, s)
        val vb = if (hasValidity) (l.dim + 7) / 8 else 0
        b.setBitsPerValue((vb + l.slotBytes) * 8)
          .setValueCompression(CompressiveEncoding.newBuilder().setFixedSizeList(FixedSizeList.newBuilder()
            .setItemsPerValue(l.dim.toLong).setHasValidity(hasValidity).setValues(PageEncoding.flat(l.itemBits))))
        val bits = new Array[Byte](vb)
        ((j: Int, _: Int) => {
          if (hasValidity) {
            java.util.Arrays.fill(bits, 0.toByte)
            var k = 0
            while (k < l.dim) { if (Bytes.getBit(l.validity.array, j.toLong * l.dim + k)) Bytes.setBit(bits, k); k += 1 }
            data.append(bits, 0, vb)
          }
          data.append(l.data.array, j * l.slotBytes, l.slotBytes)
        }, false)
      case other => throw new UnsupportedFeatureException(
        s"Column '$column': its values cannot be written as a full-zip page (${other.getClass.getSimpleName}), " +
          "which a page of this shape needs")
    }
    var slot = s.slotFrom
    var i = 0
    while (i < s.numEntries) {
      if (s.rowStart(i)) starts.add(data.size)
      val d = if (s.defs == null) 0 else s.defs(i)
      if (cw > 0) {
        val r = if (s.rep == null) 0 else s.rep(i)
        LE.uN(data, (r.toLong << bitsDef) | d, cw)
      }
      if (s.visible(i)) { writeSlot(slot, d); slot += 1 }
      i += 1
    }
    starts.add(data.size)
    val buffers =
      if (s.maxRep == 0 && !variable) Seq(data)
      else {
        val w = if (data.size.toLong < (1L << 32)) 4 else 8
        val index = new ByteSink(w * starts.size)
        var k = 0
        while (k < starts.size) { LE.uN(index, starts.array(k), w); k += 1 }
        Seq(data, index)
      }
    EncodedPage(PageLayout.newBuilder().setFullZipLayout(b).build(), buffers)
  }

  /** About the bytes of the page's data: its values, a control word per entry and a length per value. */
  private def estimatedBytes(s: PageSpan, cw: Int): Int = {
    val values = s.values match {
      case v: ValueSink.Variable =>
        v.offsets.array(s.slotFrom + s.numSlots) - v.offsets.array(s.slotFrom) + 8L * s.numSlots
      case f: ValueSink.Fixed => f.width.toLong * s.numSlots
      case l: ValueSink.FixedSizeList => (l.slotBytes + (l.dim + 7) / 8).toLong * s.numSlots
      case _ => 0L
    }
    math.min(Int.MaxValue - 64L, math.max(1L << 16, values + cw.toLong * s.numEntries + 64)).toInt
  }

  def hasNullItems(l: ValueSink.FixedSizeList, s: PageSpan): Boolean = {
    if (l.nullItems == 0) return false
    var k = s.slotFrom.toLong * l.dim
    val end = (s.slotFrom + s.numSlots).toLong * l.dim
    while (k < end) { if (!Bytes.getBit(l.validity.array, k)) return true; k += 1 }
    false
  }
}
