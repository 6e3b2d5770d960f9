package sparklance.format.file.v2_1

import scala.jdk.CollectionConverters._
import sparklance.format.proto.Encodings21Protos.ConstantLayout

/** Decodes a constant or all-null page (LANCE-FILE-2.1-2.2.md §7). */
private[v2_1] object ConstantPage {
  def decode(c: ConstantLayout, bufs: IndexedSeq[Slice], rows: Int, kind: LeafKind, ctx: Ctx): PageData = {
    val layers = new Layers(c.getLayersList.asScala.toIndexedSeq, ctx)
    val inline = if (c.hasInlineValue) c.getInlineValue.toByteArray else null
    val (value, levelBufs): (Slots, IndexedSeq[Slice]) = (inline != null, bufs.size) match {
      case (false, 0) => (null, IndexedSeq.empty)
      case (false, 2) => (null, bufs)
      case (true, 0) => (inlineValue(inline, kind, ctx), IndexedSeq.empty)
      case (true, 2) => (inlineValue(inline, kind, ctx), bufs)
      case (false, 1) => (scalar(bufs(0), kind, ctx), IndexedSeq.empty)
      case (false, 3) => (scalar(bufs(0), kind, ctx), bufs.drop(1))
      case (i, n) => throw ctx.corrupt(s"constant page with ${if (i) "an inline value and " else ""}$n buffers")
    }
    val (rep, defs, numLevels) =
      if (levelBufs.isEmpty) {
        val defs = if (value == null) Array.fill(rows)(layers.firstNullCode) else null
        (null, defs, rows)
      } else {
        def levels(has: Boolean, enc: => sparklance.format.proto.Encodings21Protos.CompressiveEncoding, count: Long, s: Slice) =
          if (s.length == 0 && (!has || count == 0)) null
          else if (has && value == null) Compressive.levels(enc, s, Math.toIntExact(count), ctx)
          else Compressive.rawLevels(s)
        val rep = levels(c.hasRepCompression, c.getRepCompression, c.getNumRepValues, levelBufs(0))
        val defs = levels(c.hasDefCompression, c.getDefCompression, c.getNumDefValues, levelBufs(1))
        val n = if (rep != null) rep.length else if (defs != null) defs.length else rows
        (rep, defs, n)
      }
    var visible = 0
    var i = 0
    while (i < numLevels) { if (defs == null || defs(i) <= layers.maxVisibleDef) visible += 1; i += 1 }
    val slots = if (value == null) Slots.Empty(visible) else Slots.repeat(value, visible, ctx)
    new PageData(rows, rep, defs, numLevels, slots, layers, ctx)
  }

  private def inlineValue(bytes: Array[Byte], kind: LeafKind, ctx: Ctx): Slots =
    if (kind.fixedBits == 1) Slots.Fixed(1, bytes, 1)
    else if (kind.fixedBits > 0) {
      if (bytes.length * 8 != kind.fixedBits) throw ctx.corrupt(s"inline constant of ${bytes.length} bytes for ${kind.fixedBits}-bit values")
      Slots.Fixed(kind.fixedBits, bytes, 1)
    } else if (kind.offsetBytes > 0) Slots.Variable(Array(0L, bytes.length.toLong), bytes, 1)
    else throw ctx.unsupported("an inline constant for this type")

  /** `u32 n, u32 len[n], buffers`: the Arrow buffers of a one-value array. */
  private def scalar(s: Slice, kind: LeafKind, ctx: Ctx): Slots = {
    ctx.check(s.length >= 4, "constant scalar buffer too short")
    val n = Bytes.u32(s.array, s.offset)
    ctx.check(n >= 1 && n <= 8 && s.length >= 4 + 4 * n, s"constant scalar with $n buffers")
    val lens = (0 until n.toInt).map(i => Bytes.u32(s.array, s.offset + 4 + 4 * i))
    var at = s.offset + 4 + 4 * n.toInt
    val parts = lens.map { l =>
      ctx.check(l <= s.end - at, "constant scalar buffers run past their page buffer")
      val p = Slice(s.array, at, l.toInt); at += l.toInt; p
    }
    if (kind.offsetBytes > 0) {
      ctx.check(n >= 2, "constant string without offsets")
      val offs = parts(n.toInt - 2)
      val data = parts(n.toInt - 1)
      ctx.check(offs.length >= 2 * kind.offsetBytes, "constant string offsets too short")
      val a = Bytes.uN(offs.array, offs.offset, kind.offsetBytes)
      val b = Bytes.uN(offs.array, offs.offset + kind.offsetBytes, kind.offsetBytes)
      ctx.check(0 <= a && a <= b && b <= data.length, "constant string offsets out of range")
      Slots.Variable(Array(0L, b - a), java.util.Arrays.copyOfRange(data.array, data.offset + a.toInt, data.offset + b.toInt), 1)
    } else inlineValue(java.util.Arrays.copyOfRange(parts.last.array, parts.last.offset, parts.last.end), kind, ctx)
  }
}
