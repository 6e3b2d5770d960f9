package sparklance.format.index.text

/** One token's row of `part_<p>_invert.lance`: its posting blocks, best block score, and impact entries. */
final case class EncodedPosting(blocks: Array[Array[Byte]], maxScore: Float, impacts: Array[Array[Byte]])

/**
 * Encodes a token's postings as pylance 14.0.2 writes them (posting_tail_codec
 * `varint_delta_v1`, 128 documents a block; docs/format-inverted-index.md), the inverse of
 * [[PostingList.decode]], with the block scores and the `_impacts` entries pylance's block-max
 * WAND prunes by.
 */
object PostingEncoder {
  import PostingList.BlockSize

  /** Blocks an impact entry of level 1 spans. */
  val BlocksPerLevel1 = 32

  /**
   * `docs` (ascending partition document ids) with `freqs`, `lengths(doc)` the documents' token
   * counts; `idf` and `avgdl` are the partition's own statistics, which the block scores use.
   */
  def encode(docs: Array[Int], freqs: Array[Int], count: Int, lengths: Array[Int], idf: Float, avgdl: Float): EncodedPosting =
    encode(docs, freqs, 0, count, lengths, idf, avgdl)

  /** [[encode]] of the `count` postings of `docs` and `freqs` from `offset`. */
  def encode(docs: Array[Int], freqs: Array[Int], offset: Int, count: Int, lengths: Array[Int], idf: Float,
      avgdl: Float): EncodedPosting = {
    val end = offset + count
    val numBlocks = (count + BlockSize - 1) / BlockSize
    val blocks = new Array[Array[Byte]](numBlocks)
    val impacts = new Array[Array[Byte]](numBlocks + (numBlocks + BlocksPerLevel1 - 1) / BlocksPerLevel1)
    val values = new Array[Int](BlockSize)
    val out = new ByteSink(256)
    var maxScore = 0f
    var b = 0
    while (b < numBlocks) {
      val from = offset + b * BlockSize
      val until = math.min(end, from + BlockSize)
      var best = 0f
      var i = from
      while (i < until) { best = math.max(best, Bm25.weight(freqs(i), lengths(docs(i)), avgdl)); i += 1 }
      val score = idf * best
      maxScore = math.max(maxScore, score)
      out.reset()
      writeFloat(out, score)
      if (until - from == BlockSize) {
        writeInt(out, docs(from))
        i = 0
        while (i < BlockSize) { values(i) = if (i == 0) 0 else docs(from + i) - docs(from + i - 1); i += 1 }
        pack(out, values)
        System.arraycopy(freqs, from, values, 0, BlockSize)
        pack(out, values)
      } else {
        i = from
        while (i < until) { writeVarint(out, if (i == from) docs(i).toLong else (docs(i) - docs(i - 1)).toLong); i += 1 }
        i = from
        while (i < until) { writeVarint(out, freqs(i).toLong); i += 1 }
      }
      blocks(b) = out.toByteArray
      impacts(b) = impactEntry(docs, freqs, lengths, from, until)
      b += 1
    }
    var g = 0
    while (numBlocks + g < impacts.length) {
      val from = offset + g * BlocksPerLevel1 * BlockSize
      // A group of one block has that block's entry.
      impacts(numBlocks + g) = if (numBlocks - g * BlocksPerLevel1 == 1) impacts(g * BlocksPerLevel1)
        else impactEntry(docs, freqs, lengths, from, math.min(end, from + BlocksPerLevel1 * BlockSize))
      g += 1
    }
    EncodedPosting(blocks, maxScore, impacts)
  }

  /**
   * An impact entry of postings `from` until `until`: varint last document id, varint number of
   * pairs, then the (frequency, quantized length) pairs of the Pareto frontier (no other posting
   * has a higher frequency and a norm as low), by ascending frequency and norm, each delta
   * encoded from the previous pair (from (0, 0)): varint `(freqDelta - 1) << 1 | flag`, and when
   * the flag is set a byte with the norm delta (flag clear: the norm grew by exactly 1).
   */
  private[text] def impactEntry(docs: Array[Int], freqs: Array[Int], lengths: Array[Int], from: Int, until: Int): Array[Byte] = {
    // The best frequency at each norm (norms are bytes), then the frontier: norms ascending, each
    // frequency above all before it. No sort: one pass over the postings, one over the 256 norms.
    val bestAt = scratch.get
    java.util.Arrays.fill(bestAt, 0)
    var i = from
    while (i < until) {
      val n = quantizeLength(lengths(docs(i)))
      if (freqs(i) > bestAt(n)) bestAt(n) = freqs(i)
      i += 1
    }
    val out = new ByteSink(16)
    writeVarint(out, docs(until - 1).toLong)
    val frontier = new ByteSink(16)
    var count = 0
    var lastFreq = 0
    var lastNorm = 0
    var norm = 0
    while (norm < 256) {
      val freq = bestAt(norm)
      if (freq > lastFreq) {
        val flag = if (norm - lastNorm == 1) 0 else 1
        writeVarint(frontier, (freq - lastFreq - 1).toLong << 1 | flag)
        if (flag == 1) frontier.write(norm - lastNorm)
        lastFreq = freq
        lastNorm = norm
        count += 1
      }
      norm += 1
    }
    writeVarint(out, count.toLong)
    out.write(frontier)
    out.toByteArray
  }

  // The best frequency at each norm, reused by a thread's impact entries.
  private val scratch = ThreadLocal.withInitial[Array[Int]](() => new Array[Int](256))

  /**
   * A document length as the byte impacts hold: exact below 8, else 4 significant bits (the
   * leading one implicit) and the shift, `(shift + 1) << 3 | next three bits` (Lucene's
   * SmallFloat.longToInt4).
   */
  def quantizeLength(length: Int): Int = {
    val v = Integer.toUnsignedLong(length)
    val bits = 64 - java.lang.Long.numberOfLeadingZeros(v)
    if (bits < 4) v.toInt
    else {
      val shift = bits - 4
      (((v >>> shift) & 0x07) | ((shift + 1) << 3)).toInt
    }
  }

  /**
   * BitPacker4x: the bit width of the largest value, then 16 × width bytes; value i sits in lane
   * i % 4 at slot i / 4, each lane packed least significant bit first into 32-bit words, word k
   * of lane j stored as little-endian u32 number 4k + j.
   */
  private[text] def pack(out: ByteSink, values: Array[Int]): Unit = {
    var max = 0
    var k = 0
    while (k < BlockSize) { max |= values(k); k += 1 }
    val width = 32 - Integer.numberOfLeadingZeros(max)
    out.write(width)
    if (width > 0) {
      val words = new Array[Int](4 * width)
      var i = 0
      while (i < BlockSize) {
        val lane = i & 3
        val bit = (i >> 2) * width
        val word = bit >>> 5
        val shift = bit & 31
        val v = values(i).toLong & 0xffffffffL
        words(4 * word + lane) |= (v << shift).toInt
        if (shift + width > 32) words(4 * (word + 1) + lane) |= (v >>> (32 - shift)).toInt
        i += 1
      }
      k = 0
      while (k < words.length) { writeInt(out, words(k)); k += 1 }
    }
  }

  private def writeInt(out: ByteSink, v: Int): Unit = {
    out.write(v & 0xff); out.write((v >>> 8) & 0xff); out.write((v >>> 16) & 0xff); out.write((v >>> 24) & 0xff)
  }
  private def writeFloat(out: ByteSink, f: Float): Unit = writeInt(out, java.lang.Float.floatToRawIntBits(f))
  private[text] def writeVarint(out: ByteSink, value: Long): Unit = {
    var v = value
    while ((v & ~0x7fL) != 0) { out.write(((v & 0x7f) | 0x80).toInt); v >>>= 7 }
    out.write(v.toInt)
  }

  /** A growable byte array, unsynchronized (ByteArrayOutputStream locks on every byte). */
  private[text] final class ByteSink(initial: Int) {
    private var bytes = new Array[Byte](initial)
    private var size = 0
    def write(b: Int): Unit = {
      if (size == bytes.length) bytes = java.util.Arrays.copyOf(bytes, bytes.length * 2)
      bytes(size) = b.toByte
      size += 1
    }
    def write(other: ByteSink): Unit = { var i = 0; while (i < other.size) { write(other.bytes(i)); i += 1 } }
    def reset(): Unit = size = 0
    def length: Int = size
    def toByteArray: Array[Byte] = java.util.Arrays.copyOf(bytes, size)
  }
}
