package sparklance.format.index.text

import sparklance.format.{CorruptFileException, UnsupportedFeatureException}

/**
 * The token positions of an INVERTED index built with positions (`with_position=True`), layout
 * `shared_stream_v2` (docs/format-inverted-index.md): one byte stream a token
 * (`_compressed_position`), cut at the byte offsets of its posting blocks
 * (`_position_block_offset`, one a block of 128 documents). A block's part holds, document after
 * document in posting order, each document's positions as deltas (the first absolute), as many as
 * its frequency. Codec `packed_delta_v1`: the block's deltas in groups of 128 packed as posting
 * blocks are (a bit width byte, then BitPacker4x), the rest as varints; `varint_doc_delta_v2`:
 * varints only.
 */
object Positions {
  val Layout = "shared_stream_v2"
  val Codecs: Set[String] = Set("packed_delta_v1", "varint_doc_delta_v2")

  /** The positions of each posting of `list` (a token's postings in one partition), in posting order. */
  def decode(stream: Array[Byte], blockOffsets: Array[Long], list: PostingList, codec: String, path: String): Array[Array[Int]] = {
    if (!Codecs.contains(codec)) throw new UnsupportedFeatureException(s"INVERTED index positions codec '$codec' of $path is not supported")
    val n = list.docs.length
    val blocks = (n + PostingList.BlockSize - 1) / PostingList.BlockSize
    if (blockOffsets.length != blocks)
      throw new CorruptFileException(path, s"${blockOffsets.length} position block offsets for $blocks posting blocks")
    val out = new Array[Array[Int]](n)
    val group = new Array[Int](PostingList.BlockSize)
    for (b <- 0 until blocks) {
      val first = b * PostingList.BlockSize
      val last = math.min(n, first + PostingList.BlockSize)
      val start = Math.toIntExact(blockOffsets(b))
      val end = if (b + 1 < blocks) Math.toIntExact(blockOffsets(b + 1)) else stream.length
      if (start > end || end > stream.length) throw new CorruptFileException(path, s"position block $b spans bytes $start to $end of ${stream.length}")
      val block = java.util.Arrays.copyOfRange(stream, start, end)
      val total = (first until last).map(i => list.freqs(i).toLong).sum
      val deltas = new Array[Int](Math.toIntExact(total))
      var p = 0
      var d = 0
      if (codec == "packed_delta_v1") while (deltas.length - d >= PostingList.BlockSize) {
        p = PostingList.unpack(block, p, group, path)
        System.arraycopy(group, 0, deltas, d, PostingList.BlockSize)
        d += PostingList.BlockSize
      }
      val varints = new PostingList.Varints(block, p, path)
      while (d < deltas.length) { deltas(d) = varints.next(); d += 1 }
      if (varints.position != block.length) throw new CorruptFileException(path, s"position block $b of ${block.length} bytes decoded from ${varints.position}")
      d = 0
      for (i <- first until last) {
        val positions = new Array[Int](list.freqs(i))
        var j = 0
        while (j < positions.length) { positions(j) = if (j == 0) deltas(d) else positions(j - 1) + deltas(d); d += 1; j += 1 }
        out(i) = positions
      }
    }
    out
  }

  /**
   * Whether a document holds the phrase: some start s with every phrase token `t` at s + its
   * offset (`phrase`: tokens and their positions relative to the first, gaps of dropped query
   * words kept), `at(t)` the document's sorted positions of `t`.
   */
  def holds(phrase: Seq[(String, Int)], at: String => Array[Int]): Boolean = {
    val (head, offset0) = phrase.head
    at(head).exists { p =>
      val s = p - offset0
      phrase.forall { case (t, offset) => java.util.Arrays.binarySearch(at(t), s + offset) >= 0 }
    }
  }
}
