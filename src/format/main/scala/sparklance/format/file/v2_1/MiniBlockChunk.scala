package sparklance.format.file.v2_1

/**
 * One mini-block chunk split into its parts (LANCE-FILE-2.1-2.2.md §5): the count of level
 * entries, the rep and def level buffers (empty when the page has none) and the value buffers.
 */
private[v2_1] final class MiniBlockChunk(val numLevels: Int, val rep: Slice, val defs: Slice, val values: Array[Slice])

private[v2_1] object MiniBlockChunk {
  /**
   * Chunk `c` of a page, `size` bytes at `chunks.array(at)` (the caller checked they are inside the
   * chunk buffer): a u16 level count, u16 sizes of the rep and def buffers where the page has them,
   * the value buffers' sizes (u16, u32 for large chunks), then each buffer padded to 8 bytes.
   */
  def parse(array: Array[Byte], at: Int, size: Int, hasRep: Boolean, hasDef: Boolean, numBuffers: Int, large: Boolean,
      c: Int, ctx: Ctx): MiniBlockChunk = {
    val end = at + size
    val sizeBytes = if (large) 4 else 2
    val headerBytes = 2 + (if (hasRep) 2 else 0) + (if (hasDef) 2 else 0) + numBuffers * sizeBytes
    if (headerBytes > size) throw ctx.corrupt(s"chunk $c of $size bytes is shorter than its header")
    var p = at
    def u16(): Int = { val v = Bytes.u16(array, p); p += 2; v }
    val numLevels = u16()
    val repBytes = if (hasRep) u16() else 0
    val defBytes = if (hasDef) u16() else 0
    val sizes = new Array[Long](numBuffers)
    var b = 0
    while (b < numBuffers) { sizes(b) = Bytes.uN(array, p, sizeBytes); p += sizeBytes; b += 1 }
    p = at + Bytes.pad8(p - at)
    def take(len: Long, what: String): Slice = {
      if (len > end - p) throw ctx.corrupt(s"chunk $c: $what of $len bytes runs past the chunk")
      val s = Slice(array, p, len.toInt)
      p = at + Bytes.pad8(p + len.toInt - at)
      s
    }
    val rep = take(repBytes, "rep levels")
    val defs = take(defBytes, "def levels")
    val values = new Array[Slice](numBuffers)
    b = 0
    while (b < numBuffers) { values(b) = take(sizes(b), s"value buffer $b"); b += 1 }
    new MiniBlockChunk(numLevels, rep, defs, values)
  }
}
