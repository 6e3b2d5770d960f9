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
  /** A phrase to find: its tokens in query order with their offsets from the first, and the slop allowed. */
  final case class Pattern(words: Seq[(String, Int)], slop: Int) {
    def holdsIn(at: String => Array[Int]): Boolean = holds(words, at, slop)
  }

  val Layout = "shared_stream_v2"
  /** The codec pylance 14.0.2 writes, and so does [[encode]]. */
  val PackedCodec = "packed_delta_v1"
  val Codecs: Set[String] = Set(PackedCodec, "varint_doc_delta_v2")

  /**
   * The inverse of [[decode]] under codec `packed_delta_v1`: `positions` holds the absolute
   * positions of the first `count` postings of `freqs`, posting after posting (`freqs(i)` of them
   * each, ascending within a posting). Returns the token's stream and the byte offset where each
   * posting block's part starts. As pylance, a block's deltas are packed 128 at a time and the
   * rest written as varints.
   */
  def encode(freqs: Array[Int], count: Int, positions: Array[Int]): (Array[Byte], Array[Int]) = {
    import PostingList.BlockSize
    val blocks = (count + BlockSize - 1) / BlockSize
    val offsets = new Array[Int](blocks)
    val out = new PostingEncoder.ByteSink(64)
    val group = new Array[Int](BlockSize)
    var at = 0 // the next position of `positions`
    var b = 0
    while (b < blocks) {
      offsets(b) = out.length
      var pending = 0
      var i = b * BlockSize
      val until = math.min(count, i + BlockSize)
      while (i < until) {
        var j = 0
        while (j < freqs(i)) {
          group(pending) = if (j == 0) positions(at) else positions(at) - positions(at - 1)
          pending += 1
          if (pending == BlockSize) { PostingEncoder.pack(out, group); pending = 0 }
          at += 1
          j += 1
        }
        i += 1
      }
      var k = 0
      while (k < pending) { PostingEncoder.writeVarint(out, Integer.toUnsignedLong(group(k))); k += 1 }
      b += 1
    }
    (out.toByteArray, offsets)
  }

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
   * Whether a document holds the phrase with `slop`: `phrase` is its tokens in query order with
   * their offsets from the first (gaps of dropped query words kept), `at(t)` the document's sorted
   * positions of `t`; a position is read relative to its token's offset (position minus offset).
   * With slop 0 the phrase is held when every token stands at its offset from one start. With a
   * slop, as pylance 14.0.2 decides it (Lance's `check_positions`; checked against pylance): each
   * token has a cursor at its first position; while some neighbours are out of line (the later
   * one before the earlier, or more than `slop` past it), every cursor moves forward to the first
   * relative position at least the furthest any pair up to the first one out of line asks (an
   * earlier cursor ahead: its position; else one past the earlier's, or the later's less the
   * slop; pairs in line ask too); a cursor running out means no. This walk misses some placements
   * an exhaustive search would find (`"brown runner ran"` at slop 1 is not found in `x ran brown
   * runner ran`: the first `ran` sends every cursor past `brown`), as pylance does.
   */
  def holds(phrase: Seq[(String, Int)], at: String => Array[Int], slop: Int = 0): Boolean =
    if (slop == 0) exactly(phrase, at) else walk(phrase, at, slop)

  private def exactly(phrase: Seq[(String, Int)], at: String => Array[Int]): Boolean = {
    val (head, offset0) = phrase.head
    at(head).exists { p =>
      val s = p - offset0
      phrase.forall { case (t, offset) => java.util.Arrays.binarySearch(at(t), s + offset) >= 0 }
    }
  }

  private def walk(phrase: Seq[(String, Int)], at: String => Array[Int], slop: Int): Boolean = {
    val positions = phrase.map { case (t, _) => at(t) }.toArray
    val offsets = phrase.map(_._2).toArray
    val cursor = new Array[Int](positions.length)
    def relative(i: Int): Option[Int] = if (cursor(i) < positions(i).length) Some(positions(i)(cursor(i)) - offsets(i)) else None
    // Token i's cursor forward to its first position whose relative position is at least `least`.
    def seek(i: Int, least: Int): Unit = {
      val want = math.max(0, least + offsets(i))
      var lo = cursor(i)
      var hi = positions(i).length
      while (lo < hi) { val mid = (lo + hi) >>> 1; if (positions(i)(mid) < want) lo = mid + 1 else hi = mid }
      cursor(i) = lo
    }
    if (positions.length == 1) return relative(0).nonEmpty
    while (true) {
      var target = Int.MinValue
      var inLine = true
      var i = 0
      while (inLine && i + 1 < positions.length) {
        (relative(i), relative(i + 1)) match {
          case (Some(last), Some(next)) =>
            target = math.max(target, if (last > next) last else math.max(last + 1, next - slop))
            inLine = last <= next && next <= last + slop
          case _ => return false
        }
        i += 1
      }
      if (inLine) return true
      cursor.indices.foreach(seek(_, target))
    }
    false
  }
}
