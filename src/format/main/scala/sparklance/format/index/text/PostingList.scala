package sparklance.format.index.text

import sparklance.format.CorruptFileException

/** One token's postings in one partition: document ids (rows of `part_<p>_docs.lance`) ascending, with frequencies. */
final case class PostingList(docs: Array[Int], freqs: Array[Int])

/**
 * One token's posting blocks in one partition as `_posting` stores them (see [[PostingList.decode]]),
 * `length` postings in all, read from the file `path`.
 */
class PostingBlocks(val blocks: Array[Array[Byte]], val length: Int, val path: String) {
  /** What they take in memory, roughly. */
  def weight: Long = blocks.iterator.map(_.length + 16L).sum + 16L

  def decode: PostingList = PostingList.decode(blocks.toSeq, length, path)

  /** How many postings block `b` holds. */
  def size(b: Int): Int = math.min(PostingList.BlockSize, length - b * PostingList.BlockSize)

  /** Block `b`'s documents and frequencies. */
  def decode(b: Int): PostingList = {
    val n = size(b)
    val docs = new Array[Int](n)
    val freqs = new Array[Int](n)
    PostingList.decodeBlock(blocks(b), n, docs, freqs, 0, path)
    PostingList(docs, freqs)
  }

  @volatile private var summary: BlockSummary = null

  /**
   * Per block: first and last document, highest frequency, fewest tokens of its documents (whose
   * token counts `numTokens` gives). What bounds a block's scores under any statistics, computed
   * once (the stored block score is one of the statistics the index was built with).
   */
  def summarize(numTokens: Array[Int]): BlockSummary = {
    if (summary == null) {
      if (blocks.length != (length + PostingList.BlockSize - 1) / PostingList.BlockSize)
        throw new CorruptFileException(path, s"${blocks.length} posting blocks for $length postings")
      val list = decode
      val s = new BlockSummary(blocks.length)
      var b = 0
      while (b < blocks.length) {
        val from = b * PostingList.BlockSize
        val to = from + size(b)
        s.first(b) = list.docs(from)
        s.last(b) = list.docs(to - 1)
        var i = from
        var maxFreq = 0
        var minLength = Int.MaxValue
        while (i < to) {
          val d = list.docs(i)
          if (d < 0 || d >= numTokens.length) throw new CorruptFileException(path, s"document $d of ${numTokens.length}")
          maxFreq = math.max(maxFreq, list.freqs(i))
          minLength = math.min(minLength, numTokens(d))
          i += 1
        }
        s.maxFreq(b) = maxFreq
        s.minLength(b) = minLength
        b += 1
      }
      summary = s
    }
    summary
  }
}

/** See [[PostingBlocks.summarize]]. */
final class BlockSummary(n: Int) {
  val first = new Array[Int](n)
  val last = new Array[Int](n)
  val maxFreq = new Array[Int](n)
  val minLength = new Array[Int](n)
}

object PostingList {
  val BlockSize = 128

  /**
   * Decodes the blocks of `_posting` (posting_tail_codec `varint_delta_v1`, 128 documents a
   * block) holding `length` postings. Every block starts with its best score (an f32, skipped: we
   * score exactly). A full block holds the first document (u32), then BitPacker4x-packed document
   * deltas and frequencies, each behind a byte giving its bit width; the last block, when shorter,
   * holds varints: document ids (the first absolute, then deltas), then frequencies.
   */
  def decode(blocks: Seq[Array[Byte]], length: Int, path: String): PostingList = {
    val docs = new Array[Int](length)
    val freqs = new Array[Int](length)
    var done = 0
    for (block <- blocks) {
      if (done >= length) throw new CorruptFileException(path, s"more posting blocks than $length postings need")
      val n = math.min(BlockSize, length - done)
      decodeBlock(block, n, docs, freqs, done, path)
      done += n
    }
    if (done != length) throw new CorruptFileException(path, s"posting blocks hold $done postings, _length says $length")
    PostingList(docs, freqs)
  }

  /**
   * Decodes one block of `n` postings (a full block when `n` is [[BlockSize]], else the tail) into
   * `docs` and `freqs` from index `at`.
   */
  def decodeBlock(block: Array[Byte], n: Int, docs: Array[Int], freqs: Array[Int], at: Int, path: String): Unit = {
    var p = 4
    if (n == BlockSize) {
      if (block.length < 9) throw new CorruptFileException(path, s"a full posting block of ${block.length} bytes")
      val values = new Array[Int](BlockSize)
      val first = le32(block, p); p += 4
      p = unpack(block, p, values, path)
      var doc = first
      var i = 0
      while (i < BlockSize) { if (i > 0) doc += values(i); docs(at + i) = doc; i += 1 }
      p = unpack(block, p, values, path)
      System.arraycopy(values, 0, freqs, at, BlockSize)
    } else {
      val reader = new Varints(block, p, path)
      var doc = 0
      var i = 0
      while (i < n) { val d = reader.next(); doc = if (i == 0) d else doc + d; docs(at + i) = doc; i += 1 }
      i = 0
      while (i < n) { freqs(at + i) = reader.next(); i += 1 }
      p = reader.position
    }
    if (p != block.length) throw new CorruptFileException(path, s"a posting block of ${block.length} bytes decoded from $p")
  }

  private[text] def le32(b: Array[Byte], at: Int): Int =
    (b(at) & 0xff) | (b(at + 1) & 0xff) << 8 | (b(at + 2) & 0xff) << 16 | (b(at + 3) & 0xff) << 24

  /**
   * BitPacker4x: 128 values in 4 interleaved lanes (value i in lane i % 4, slot i / 4), each lane
   * packed least significant bit first into 32-bit words, word k of lane j stored as u32 number
   * 4k + j. A bit width byte precedes the 16 × width bytes.
   */
  private[text] def unpack(b: Array[Byte], at: Int, out: Array[Int], path: String): Int = {
    val width = b(at) & 0xff
    if (width > 32) throw new CorruptFileException(path, s"a bit width of $width")
    val start = at + 1
    val end = start + 16 * width
    if (end > b.length) throw new CorruptFileException(path, s"a packed block of width $width past the end of its ${b.length} bytes")
    var i = 0
    while (i < BlockSize) {
      val lane = i & 3
      val slot = i >> 2
      var v = 0L
      if (width > 0) {
        val bit = slot * width
        val word = bit >>> 5
        val shift = bit & 31
        val lo = le32(b, start + 4 * (4 * word + lane)).toLong & 0xffffffffL
        v = lo >>> shift
        if (shift + width > 32) v |= (le32(b, start + 4 * (4 * (word + 1) + lane)).toLong & 0xffffffffL) << (32 - shift)
        v &= (1L << width) - 1
      }
      out(i) = v.toInt
      i += 1
    }
    end
  }

  private[text] final class Varints(b: Array[Byte], var position: Int, path: String) {
    def next(): Int = {
      var v = 0L
      var shift = 0
      while (true) {
        if (position >= b.length) throw new CorruptFileException(path, "a posting varint past the end of its block")
        val x = b(position) & 0xff
        position += 1
        v |= (x & 0x7fL) << shift
        if (x < 0x80) return v.toInt
        shift += 7
        if (shift > 35) throw new CorruptFileException(path, "a posting varint longer than 5 bytes")
      }
      0
    }
  }
}
