package sparklance.format.file.v2_1

import com.google.protobuf.ByteString
import scala.jdk.CollectionConverters._
import sparklance.format.proto.Encodings21Protos.{ConstantLayout, PageLayout, RepDefLayer}

/**
 * Pages without a single valid leaf value (LANCE-FILE-2.1-2.2.md §7): the all-null form of the
 * constant layout, which both 2.1 and 2.2 accept. A lone nullable leaf needs no buffers; anything
 * else keeps its rep and def levels as raw u16 buffers.
 */
private[v2_1] object ConstantEncoder {
  def allNull(s: PageSpan): EncodedPage = {
    val b = ConstantLayout.newBuilder().addAllLayers(s.layers.asJava)
    val buffers =
      if (s.layers == Seq(RepDefLayer.REPDEF_NULLABLE_ITEM)) Nil
      else Seq(raw16(s.rep, s.numEntries), raw16(s.defs, s.numEntries))
    EncodedPage(PageLayout.newBuilder().setConstantLayout(b).build(), buffers)
  }

  /**
   * 2.2 only: a page whose valid values all equal `value` (fixed width, at most 32 bytes; one
   * bitmap byte for booleans) is stored as that inline value plus raw u16 rep/def buffers when the
   * page has levels (§7).
   */
  def inline(s: PageSpan, value: Array[Byte]): EncodedPage = {
    val b = ConstantLayout.newBuilder().addAllLayers(s.layers.asJava).setInlineValue(ByteString.copyFrom(value))
    val buffers = if (s.rep == null && s.defs == null) Nil else Seq(raw16(s.rep, s.numEntries), raw16(s.defs, s.numEntries))
    EncodedPage(PageLayout.newBuilder().setConstantLayout(b).build(), buffers)
  }

  /**
   * The one value all valid slots of the page hold, if they hold one (fixed width ≤ 32 bytes, bool;
   * not packed structs, which pylance writes as mini-blocks only).
   */
  def commonValue(s: PageSpan): Option[Array[Byte]] = s.values match {
    case _: ValueSink.PackedStruct => None
    case f: ValueSink.Fixed if f.width <= 32 =>
      var first = -1
      var slot = s.slotFrom
      var i = 0
      while (i < s.numEntries) {
        if (s.visible(i)) {
          if (s.defs == null || s.defs(i) == 0) {
            if (first < 0) first = slot
            else if (!java.util.Arrays.equals(f.data.array, slot * f.width, (slot + 1) * f.width,
                f.data.array, first * f.width, (first + 1) * f.width)) return None
          }
          slot += 1
        }
        i += 1
      }
      if (first < 0) None else Some(java.util.Arrays.copyOfRange(f.data.array, first * f.width, (first + 1) * f.width))
    case b: ValueSink.Bools =>
      var seen = -1
      var slot = s.slotFrom.toLong
      var i = 0
      while (i < s.numEntries) {
        if (s.visible(i)) {
          if (s.defs == null || s.defs(i) == 0) {
            val v = if (Bytes.getBit(b.bits.array, slot)) 1 else 0
            if (seen < 0) seen = v else if (seen != v) return None
          }
          slot += 1
        }
        i += 1
      }
      if (seen < 0) None else Some(Array(seen.toByte))
    case _ => None
  }

  private def raw16(levels: Array[Int], n: Int): ByteSink = {
    val out = new ByteSink(if (levels == null) 16 else 2 * n)
    if (levels != null) { var i = 0; while (i < n) { LE.u16(out, levels(i)); i += 1 } }
    out
  }
}
