package sparklance.format.file.v2_1

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.proto.Encodings21Protos.MiniBlockLayout

/** Decodes a mini-block page (LANCE-FILE-2.1-2.2.md §5): chunk metadata, chunks, dictionary. */
private[v2_1] object MiniBlockPage {
  /**
   * The page's rows, decoded into `arrays`: new ones, unless the caller lends arrays it reuses
   * (bit-packed and flat values straight into one, the chunks of variable-width values joined into two).
   * A dictionary page's `items` may be given, decoded before (their values are not copied, see
   * [[Slots.Indexed]]).
   */
  def decode(m: MiniBlockLayout, bufs: IndexedSeq[Slice], rows: Int, ctx: Ctx,
      arrays: PageArrays = PageArrays.Fresh, items: Option[Slots] = None): PageData = {
    val layers = new Layers(m.getLayersList.asScala.toIndexedSeq, ctx)
    if (bufs.size < 2) throw ctx.corrupt(s"mini-block page with ${bufs.size} buffers")
    if (m.getRepetitionIndexDepth > 1) throw ctx.unsupported(s"a repetition index of depth ${m.getRepetitionIndexDepth}")
    val numItems = m.getNumItems
    if (numItems < 0 || numItems > Int.MaxValue) throw ctx.corrupt(s"$numItems items in a page")
    val numBuffers = m.getNumBuffers
    if (numBuffers < 1 || numBuffers > 64) throw ctx.corrupt(s"mini-block page with $numBuffers value buffers")
    val hasRep = m.hasRepCompression
    val hasDef = m.hasDefCompression
    val large = m.getHasLargeChunk
    val wordBytes = if (large) 4 else 2

    val meta = bufs(0)
    val chunks = bufs(1)
    if (meta.length % wordBytes != 0) throw ctx.corrupt(s"chunk metadata of ${meta.length} bytes")
    val numChunks = meta.length / wordBytes

    val reps = if (hasRep) new IntSink() else null
    val defs = if (hasDef) new IntSink() else null
    val values = new ArrayBuffer[Slots](numChunks)
    // Bit-packed and flat chunks decode straight into one array for the page, not each into its
    // own to be concatenated after.
    val pageWidth = Compressive.pageArrayWidth(m.getValueCompression, ctx)
    val pageValues = pageWidth.map(t => arrays.values(Math.multiplyExact(numItems.toInt, t / 8)))
    var levels = 0L
    var at = chunks.offset
    var itemsSoFar = 0L
    for (c <- 0 until numChunks) {
      val word = Bytes.uN(meta.array, meta.offset + c * wordBytes, wordBytes)
      val size = ((word >>> 4) + 1) * 8
      val log2 = (word & 0xf).toInt
      val count = if (c == numChunks - 1) numItems - itemsSoFar else 1L << log2
      if (count < 0 || itemsSoFar + count > numItems) throw ctx.corrupt(s"chunk $c holds $count values, the page $numItems")
      if (size > chunks.end - at) throw ctx.corrupt(s"chunk $c of $size bytes runs past its buffer")
      val parts = MiniBlockChunk.parse(chunks.array, at.toInt, size.toInt, hasRep, hasDef, numBuffers.toInt, large, c, ctx)
      val (numLevels, repSlice, defSlice, valueBufs) = (parts.numLevels, parts.rep, parts.defs, parts.values)
      if (hasRep) { val r = Compressive.levels(m.getRepCompression, repSlice, numLevels, ctx); reps.appendAll(r, 0, r.length) }
      if (hasDef) { val d = Compressive.levels(m.getDefCompression, defSlice, numLevels, ctx); defs.appendAll(d, 0, d.length) }
      levels += numLevels
      pageValues match {
        case Some(out) =>
          if (valueBufs.isEmpty) throw ctx.corrupt(s"chunk $c without value buffers")
          Compressive.chunkInto(m.getValueCompression, valueBufs(0), pageWidth.get, count.toInt, out, itemsSoFar.toInt, ctx)
        case None =>
          values += Compressive.chunk(m.getValueCompression, scala.collection.immutable.ArraySeq.unsafeWrapArray(valueBufs), count.toInt, ctx)
      }
      itemsSoFar += count
      at += size.toInt
    }
    if (itemsSoFar != numItems) throw ctx.corrupt(s"chunks hold $itemsSoFar values, the page $numItems")
    var slots = pageValues match {
      case Some(out) if numChunks > 0 => Slots.Fixed(pageWidth.get, out, numItems.toInt)
      case _ => if (values.isEmpty) Slots.Empty(0) else Slots.concat(values, ctx, arrays)
    }
    if (m.hasDictionary) {
      slots = slots match {
        case idx: Slots.Fixed => Slots.gather(items.getOrElse(dictionary(m, bufs.drop(2), ctx)), idx, ctx)
        case _: Slots.Empty => slots
        case other => throw ctx.corrupt(s"dictionary indices decoded to ${Slots.kind(other)}")
      }
    }
    val numLevels = if (hasRep || hasDef) Math.toIntExact(levels) else slots.count
    new PageData(rows, if (hasRep) reps.toArray else null, if (hasDef) defs.toArray else null, numLevels, slots, layers, ctx)
  }

  /** The decoded dictionary of a dictionary page, from the first of its buffers after the chunks (`trailing`). */
  def dictionary(m: MiniBlockLayout, trailing: IndexedSeq[Slice], ctx: Ctx): Slots = {
    if (trailing.isEmpty) throw ctx.corrupt("dictionary page without its dictionary buffer")
    val n = m.getNumDictionaryItems
    if (n < 0 || n > Int.MaxValue) throw ctx.corrupt(s"$n dictionary items")
    Compressive.block(m.getDictionary, trailing.head, n.toInt, ctx)
  }
}
