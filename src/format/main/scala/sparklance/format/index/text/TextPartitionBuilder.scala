package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
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
  private var postingDocs = new Array[Ints](1024)
  private var postingFreqs = new Array[Ints](1024)
  // Each token's positions, posting after posting (only `withPositions`).
  private var postingPositions = new Array[Ints](if (withPositions) 1024 else 0)
  private val rowIds = new Longs()
  private val lengths = new Ints()
  private var totalTokens = 0L

  def numDocs: Int = lengths.size

  private val pieces = new PieceTable
  // The last document each token id was seen in (-1: none yet).
  private var lastDoc = new Array[Int](1024)

  private def tokenId(t: String): Int = {
    val known = ids.get(t)
    if (known != null) known.intValue
    else {
      val id = tokens.size
      ids.put(t, id)
      tokens += t
      if (id >= postingDocs.length) {
        postingDocs = java.util.Arrays.copyOf(postingDocs, postingDocs.length * 2)
        postingFreqs = java.util.Arrays.copyOf(postingFreqs, postingFreqs.length * 2)
        lastDoc = java.util.Arrays.copyOf(lastDoc, lastDoc.length * 2)
        if (withPositions) postingPositions = java.util.Arrays.copyOf(postingPositions, postingPositions.length * 2)
      }
      if (withPositions) postingPositions(id) = new Ints(4)
      postingDocs(id) = new Ints(4)
      postingFreqs(id) = new Ints(4)
      lastDoc(id) = -1
      id
    }
  }

  /** Adds the row `rowId` (its address, or its stable id) holding `text`; no token, no document. */
  def add(rowId: Long, text: String): Unit = {
    val doc = lengths.size
    var n = 0
    var position = 0
    analyzer.foreachPiece(text) { (start, end) =>
      // A piece's token id (or Dropped) remembered: most pieces repeat, and the analyzer is the cost.
      var id = pieces.get(text, start, end)
      if (id == PieceTable.Absent) {
        val t = analyzer.analyze(text.substring(start, end), stemmer)
        id = if (t == null) Dropped else tokenId(t)
        pieces.put(text, start, end, id)
      }
      if (id != Dropped) {
        n += 1
        // Postings grow in document order: a token seen before in this document counts once more.
        if (lastDoc(id) == doc) postingFreqs(id).values(postingFreqs(id).size - 1) += 1
        else { lastDoc(id) = doc; postingDocs(id).add(doc); postingFreqs(id).add(1) }
        if (withPositions) postingPositions(id).add(position)
      }
      position += 1
    }
    if (n > 0) {
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
    val files = TextIndexFiles.writePartition(storage, dir, partition, allocator, withPositions)(
      fst.finish(), n, totalLength, rowIds.values, docLengths, numDocs, totalTokens, n,
      id => {
        val docs = postingDocs(order(id))
        val freqs = postingFreqs(order(id)).values
        val encoded = PostingEncoder.encode(docs.values, freqs, docs.size, docLengths, Bm25.idf(numDocs, docs.size), avgdl)
        val positions = if (withPositions) Some(Positions.encode(freqs, docs.size, postingPositions(order(id)).values)) else None
        (encoded, docs.size, positions)
      })
    files
  }
}

object TextPartitionBuilder {
  private val Dropped = -1

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
