package sparklance.format.index.text

import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, LargeVarCharVector, VarCharVector}
import org.tartarus.snowball.ext.EnglishStemmer

/**
 * The documents of one partition of an INVERTED index segment as they are added, and the write
 * of its three files (docs/format-inverted-index.md). A document is a row whose text gives at
 * least one token; its id is its place among the partition's documents. Token ids are handed out
 * as tokens first appear and renumbered in byte order at the write, so the token map's order
 * and the invert file's rows agree. With `withPositions` each token also keeps the positions of
 * its postings (a position is the index of the base tokenizer's piece, so dropped pieces leave
 * gaps), written as pylance's `_compressed_position` for phrase queries. Primitive arrays
 * throughout: a build adds millions of postings. Not thread safe.
 */
final class TextPartitionBuilder(analyzer: TextAnalyzer, withPositions: Boolean = false) {
  import TextPartitionBuilder._

  private val stemmer = new EnglishStemmer
  private val ids = new java.util.HashMap[String, Integer]()
  private val tokens = new scala.collection.mutable.ArrayBuffer[String]()
  private val rowIds = new Longs()
  private val lengths = new Ints()
  private var totalTokens = 0L

  // The postings in the order they are added (document by document): token id, document,
  // frequency. One stream rather than a list per token: appending touches memory in order, where
  // lists spread over the vocabulary missed the cache at every token. The write sorts them by token.
  private val entryTokens = new Ints(1 << 16)
  private val entryDocs = new Ints(1 << 16)
  private val entryFreqs = new Ints(1 << 16)
  // The last entry of each token id (-1: none yet): a token seen before in the document being
  // added has its entry at or after the document's first.
  private var lastEntry = new Array[Int](1024)
  // With positions: every token kept (token id, position), in the order added; grouped by token at
  // the write, each token's are its postings' positions, posting after posting.
  private val occurrenceTokens = new Ints(if (withPositions) 1 << 16 else 0)
  private val occurrencePositions = new Ints(if (withPositions) 1 << 16 else 0)

  def numDocs: Int = lengths.size

  private val pieces = new PieceTable

  private def tokenId(t: String): Int = {
    val known = ids.get(t)
    if (known != null) known.intValue
    else {
      val id = tokens.size
      ids.put(t, id)
      tokens += t
      if (id >= lastEntry.length) lastEntry = java.util.Arrays.copyOf(lastEntry, lastEntry.length * 2)
      lastEntry(id) = -1
      id
    }
  }

  // The token ids of the document being added, in order, until it is complete, and (with
  // positions) their positions.
  private val docTokens = new Ints(64)
  private val docPositions = new Ints(64)

  /** Adds the row `rowId` (its address, or its stable id) holding `text`; no token, no document. */
  def add(rowId: Long, text: String): Unit = {
    docTokens.clear()
    docPositions.clear()
    var position = 0
    analyzer.foreachPiece(text) { (start, end) =>
      // A piece's token id (or Dropped) remembered: most pieces repeat, and the analyzer is the cost.
      var id = pieces.get(text, start, end)
      if (id == PieceTable.Absent) {
        id = analyzed(text.substring(start, end))
        pieces.put(text, start, end, id)
      }
      if (id != Dropped) { docTokens.add(id); if (withPositions) docPositions.add(position) }
      position += 1
    }
    addDocument(rowId)
  }

  /**
   * Adds row `index` of the string `vector` (its row id `rowId`) unless it is null: the same as
   * `add(rowId, text)` with the row's text, but ASCII text is split and looked up as the bytes it
   * is stored as, with no String made for the row or its pieces (a build's largest cost was
   * making them). A row with any other character takes the String path.
   */
  def add(rowId: Long, vector: FieldVector, index: Int): Unit = if (!vector.isNull(index)) {
    val (data, start, length) = vector match {
      case v: VarCharVector => (v.getDataBuffer, v.getStartOffset(index).toLong, v.getValueLength(index))
      case v: LargeVarCharVector =>
        (v.getDataBuffer, v.getOffsetBuffer.getLong(index.toLong * org.apache.arrow.vector.BaseLargeVariableWidthVector.OFFSET_WIDTH), v.getValueLength(index))
      case other => throw new IllegalArgumentException(s"${other.getField} is not a string column")
    }
    if (row.length < length) row = new Array[Byte](math.max(length, 2 * row.length))
    data.getBytes(start, row, 0, length)
    addUtf8(rowId, row, length)
  }

  // The bytes of the row being added.
  private var row = new Array[Byte](1024)

  /** Adds the row `rowId` whose text is the UTF-8 `bytes` until `length`, as [[add]] does its String. */
  private[text] def addUtf8(rowId: Long, bytes: Array[Byte], length: Int): Unit = {
    val kept = asciiKept
    if (kept == null) return add(rowId, new String(bytes, 0, length, UTF_8))
    docTokens.clear()
    docPositions.clear()
    pieceCount = 0
    var start = -1
    var h = 0
    var i = 0
    while (i < length) {
      val b = bytes(i)
      // Not ASCII: the row is split as a String, which knows Unicode's letters and digits.
      if (b < 0) return add(rowId, new String(bytes, 0, length, UTF_8))
      if (kept(b)) { if (start < 0) { start = i; h = 0 }; h = 31 * h + b }
      else if (start >= 0) { asciiPiece(bytes, start, i, h); start = -1 }
      i += 1
    }
    if (start >= 0) asciiPiece(bytes, start, length, h)
    addDocument(rowId)
  }

  private val asciiKept = TextAnalyzer.asciiKept(analyzer.base)
  private val asciiPieces = new BytePieceTable

  // The pieces of the row being added so far: the next one's position.
  private var pieceCount = 0

  private def asciiPiece(bytes: Array[Byte], start: Int, end: Int, hash: Int): Unit = {
    var id = asciiPieces.get(bytes, start, end, hash)
    if (id == PieceTable.Absent) {
      id = analyzed(new String(bytes, start, end - start, ISO_8859_1))
      asciiPieces.put(bytes, start, end, hash, id)
    }
    if (id != Dropped) { docTokens.add(id); if (withPositions) docPositions.add(pieceCount) }
    pieceCount += 1
  }

  /** The token id of the piece `raw` the base tokenizer cut out, or Dropped. */
  private def analyzed(raw: String): Int = {
    val t = analyzer.analyze(raw, stemmer)
    if (t == null) Dropped else tokenId(t)
  }

  /** Adds the document of row `rowId` whose tokens are `docTokens`, unless it has none. */
  private def addDocument(rowId: Long): Unit = {
    val n = docTokens.size
    if (n > 0) {
      val doc = lengths.size
      val first = entryTokens.size
      val ids = docTokens.values
      var k = 0
      while (k < n) {
        val id = ids(k)
        // A token seen before in this document counts once more.
        val last = lastEntry(id)
        if (last >= first) entryFreqs.values(last) += 1
        else { lastEntry(id) = entryTokens.size; entryTokens.add(id); entryDocs.add(doc); entryFreqs.add(1) }
        k += 1
      }
      if (withPositions) {
        k = 0
        while (k < n) { occurrenceTokens.add(ids(k)); occurrencePositions.add(docPositions.values(k)); k += 1 }
      }
      rowIds.add(rowId)
      lengths.add(n)
      totalTokens += n
    }
  }

  /**
   * Writes `part_<partition>_tokens.lance`, `_docs.lance` and `_invert.lance` into `dir`; returns
   * each file's name and size. Nothing is written for a partition without documents unless
   * `evenIfEmpty` (a segment over no document still has one partition).
   */
  def write(storage: sparklance.format.io.Storage, dir: String, partition: Int, allocator: BufferAllocator,
      evenIfEmpty: Boolean = false): Seq[(String, Long)] = {
    if (numDocs == 0 && !evenIfEmpty) return Nil
    val n = tokens.size
    val bytes = tokens.map(_.getBytes(UTF_8)).toArray
    val boxed = Array.tabulate[Integer](n)(i => i)
    java.util.Arrays.sort(boxed, (x: Integer, y: Integer) => java.util.Arrays.compareUnsigned(bytes(x), bytes(y)))
    val order = boxed.map(_.intValue)
    val fst = new TokenMapWriter
    var totalLength = 0L
    order.indices.foreach { id => fst.add(bytes(order(id)), id.toLong); totalLength += bytes(order(id)).length }
    val docLengths = java.util.Arrays.copyOf(lengths.values, numDocs)
    val avgdl = Bm25.avgdl(totalTokens, numDocs)
    val (start, docs, freqs) = byToken(n)
    val (positionStart, positions) = if (withPositions) positionsByToken(n) else (null, null)
    val files = TextIndexFiles.writePartition(storage, dir, partition, allocator, withPositions)(
      fst.finish(), n, totalLength, rowIds.values, docLengths, numDocs, totalTokens, n,
      id => {
        val t = order(id)
        val count = start(t + 1) - start(t)
        val encoded = PostingEncoder.encode(docs, freqs, start(t), count, docLengths, Bm25.idf(numDocs, count), avgdl)
        val encodedPositions = if (!withPositions) None else Some(Positions.encode(
          java.util.Arrays.copyOfRange(freqs, start(t), start(t + 1)), count,
          java.util.Arrays.copyOfRange(positions, positionStart(t), positionStart(t + 1))))
        (encoded, count, encodedPositions)
      })
    files
  }

  /**
   * The postings grouped by token id (a counting sort, stable, so each token's documents stay
   * ascending): token `t`'s are `docs` and `freqs` from `start(t)` until `start(t + 1)`.
   */
  private def byToken(numTokens: Int): (Array[Int], Array[Int], Array[Int]) = {
    val start = groupStarts(entryTokens, numTokens)
    (start, grouped(entryTokens, start, entryDocs), grouped(entryTokens, start, entryFreqs))
  }

  /** The positions grouped by token id as [[byToken]] groups postings: token `t`'s from `start(t)` until `start(t + 1)`. */
  private def positionsByToken(numTokens: Int): (Array[Int], Array[Int]) = {
    val start = groupStarts(occurrenceTokens, numTokens)
    (start, grouped(occurrenceTokens, start, occurrencePositions))
  }
}

object TextPartitionBuilder {
  private val Dropped = -1

  /** Where each token's group starts when the items of tokens `tokenOf` are grouped by token, and the end (`numTokens + 1` entries). */
  private def groupStarts(tokenOf: Ints, numTokens: Int): Array[Int] = {
    val start = new Array[Int](numTokens + 1)
    var i = 0
    while (i < tokenOf.size) { start(tokenOf.values(i) + 1) += 1; i += 1 }
    var t = 0
    while (t < numTokens) { start(t + 1) += start(t); t += 1 }
    start
  }

  /** `values` (one per item of `tokenOf`) grouped by token from `start` ([[groupStarts]]), in their order within a token. */
  private def grouped(tokenOf: Ints, start: Array[Int], values: Ints): Array[Int] = {
    val next = java.util.Arrays.copyOf(start, start.length - 1)
    val out = new Array[Int](tokenOf.size)
    var i = 0
    while (i < tokenOf.size) {
      val t = tokenOf.values(i)
      out(next(t)) = values.values(i)
      next(t) += 1
      i += 1
    }
    out
  }

  /**
   * Pieces of text (ranges of a string) → token id, open addressing on primitive arrays: looked
   * up without cutting the piece out of its text. Stops remembering at [[MaxPieces]] pieces.
   */
  private final class PieceTable {
    private var keys = new Array[String](1 << 12)
    private var hashes = new Array[Int](1 << 12)
    private var values = new Array[Int](1 << 12)
    private var size = 0

    private def hash(text: String, start: Int, end: Int): Int = {
      var h = 0
      var i = start
      while (i < end) { h = 31 * h + text.charAt(i); i += 1 }
      h ^ (h >>> 16)
    }

    private def matches(key: String, text: String, start: Int, end: Int): Boolean =
      key.length == end - start && key.regionMatches(0, text, start, end - start)

    def get(text: String, start: Int, end: Int): Int = {
      val h = hash(text, start, end)
      val mask = keys.length - 1
      var slot = h & mask
      while (keys(slot) != null) {
        if (hashes(slot) == h && matches(keys(slot), text, start, end)) return values(slot)
        slot = (slot + 1) & mask
      }
      PieceTable.Absent
    }

    def put(text: String, start: Int, end: Int, value: Int): Unit = if (size < PieceTable.MaxPieces) {
      if (2 * (size + 1) > keys.length) grow()
      insert(text.substring(start, end), hash(text, start, end), value)
      size += 1
    }

    private def insert(key: String, h: Int, value: Int): Unit = {
      val mask = keys.length - 1
      var slot = h & mask
      while (keys(slot) != null) slot = (slot + 1) & mask
      keys(slot) = key; hashes(slot) = h; values(slot) = value
    }

    private def grow(): Unit = {
      val (oldKeys, oldHashes, oldValues) = (keys, hashes, values)
      keys = new Array[String](oldKeys.length * 2)
      hashes = new Array[Int](oldKeys.length * 2)
      values = new Array[Int](oldKeys.length * 2)
      var i = 0
      while (i < oldKeys.length) { if (oldKeys(i) != null) insert(oldKeys(i), oldHashes(i), oldValues(i)); i += 1 }
    }
  }

  /**
   * Pieces of ASCII text given as byte ranges (with their hash, `31 * h + byte` over the piece) →
   * token id, open addressing; the keys' bytes are kept in one array. Stops remembering at
   * [[PieceTable.MaxPieces]] pieces.
   */
  private final class BytePieceTable {
    private var bytes = new Array[Byte](1 << 16)
    private var used = 0
    private var starts = new Array[Int](1 << 12)
    // 0: an empty slot (a piece has at least one byte).
    private var lengths = new Array[Int](1 << 12)
    private var hashes = new Array[Int](1 << 12)
    private var values = new Array[Int](1 << 12)
    private var size = 0

    // The piece hash mixed, so that the low bits the slots take depend on every byte.
    private def slotOf(h: Int, mask: Int): Int = { val m = h * 0x9e3779b9; (m ^ (m >>> 16)) & mask }

    def get(text: Array[Byte], start: Int, end: Int, h: Int): Int = {
      val mask = lengths.length - 1
      var slot = slotOf(h, mask)
      val n = end - start
      while (lengths(slot) != 0) {
        if (hashes(slot) == h && lengths(slot) == n && same(starts(slot), text, start, n)) return values(slot)
        slot = (slot + 1) & mask
      }
      PieceTable.Absent
    }

    // Byte by byte: pieces are short, and Arrays.equals on ranges cost more in its checks than this loop.
    private def same(at: Int, text: Array[Byte], start: Int, n: Int): Boolean = {
      var i = 0
      while (i < n && bytes(at + i) == text(start + i)) i += 1
      i == n
    }

    def put(text: Array[Byte], start: Int, end: Int, h: Int, value: Int): Unit = if (size < PieceTable.MaxPieces) {
      if (2 * (size + 1) > lengths.length) grow()
      val n = end - start
      if (used + n > bytes.length) bytes = java.util.Arrays.copyOf(bytes, math.max(used + n, 2 * bytes.length))
      System.arraycopy(text, start, bytes, used, n)
      insert(used, n, h, value)
      used += n
      size += 1
    }

    private def insert(start: Int, n: Int, h: Int, value: Int): Unit = {
      val mask = lengths.length - 1
      var slot = slotOf(h, mask)
      while (lengths(slot) != 0) slot = (slot + 1) & mask
      starts(slot) = start; lengths(slot) = n; hashes(slot) = h; values(slot) = value
    }

    private def grow(): Unit = {
      val (oldStarts, oldLengths, oldHashes, oldValues) = (starts, lengths, hashes, values)
      starts = new Array[Int](oldLengths.length * 2)
      lengths = new Array[Int](oldLengths.length * 2)
      hashes = new Array[Int](oldLengths.length * 2)
      values = new Array[Int](oldLengths.length * 2)
      var i = 0
      while (i < oldLengths.length) {
        if (oldLengths(i) != 0) insert(oldStarts(i), oldLengths(i), oldHashes(i), oldValues(i))
        i += 1
      }
    }
  }

  private object PieceTable {
    val Absent: Int = -2
    // Distinct pieces remembered at most (a few tens of MB).
    val MaxPieces: Int = 1 << 20
  }

  /** A growable int array. */
  private[text] final class Ints(initial: Int = 16) {
    var values = new Array[Int](initial)
    var size = 0
    def add(v: Int): Unit = {
      if (size == values.length) values = java.util.Arrays.copyOf(values, values.length * 2)
      values(size) = v
      size += 1
    }
    def clear(): Unit = size = 0
  }

  /** A growable long array. */
  private[text] final class Longs(initial: Int = 16) {
    var values = new Array[Long](initial)
    var size = 0
    def add(v: Long): Unit = {
      if (size == values.length) values = java.util.Arrays.copyOf(values, values.length * 2)
      values(size) = v
      size += 1
    }
  }
}
