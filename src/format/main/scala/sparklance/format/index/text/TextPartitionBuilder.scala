package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.tartarus.snowball.ext.EnglishStemmer

/**
 * The documents of one partition of an INVERTED index segment as they are added, and the write
 * of its three files (docs/format-inverted-index.md). A document is a row whose text gives at
 * least one token; its id is its place among the partition's documents. Token ids are handed out
 * as tokens first appear and renumbered in byte order at the write, so the token map's order
 * and the invert file's rows agree. Primitive arrays throughout: a build adds millions of
 * postings. Not thread safe.
 */
final class TextPartitionBuilder(analyzer: TextAnalyzer) {
  import TextPartitionBuilder._

  private val stemmer = new EnglishStemmer
  private val ids = new java.util.HashMap[String, Integer]()
  private val tokens = new scala.collection.mutable.ArrayBuffer[String]()
  private var postingDocs = new Array[Ints](1024)
  private var postingFreqs = new Array[Ints](1024)
  private val rowIds = new Longs()
  private val lengths = new Ints()
  private var totalTokens = 0L
  private val docTokens = new Ints()

  def numDocs: Int = lengths.size

  /** Adds the row `rowId` (its address, or its stable id) holding `text`; no token, no document. */
  def add(rowId: Long, text: String): Unit = {
    docTokens.clear()
    analyzer.foreachToken(text, stemmer) { t =>
      var id = ids.get(t)
      if (id == null) {
        id = tokens.size
        ids.put(t, id)
        tokens += t
        if (id >= postingDocs.length) {
          postingDocs = java.util.Arrays.copyOf(postingDocs, postingDocs.length * 2)
          postingFreqs = java.util.Arrays.copyOf(postingFreqs, postingFreqs.length * 2)
        }
        postingDocs(id) = new Ints(4)
        postingFreqs(id) = new Ints(4)
      }
      docTokens.add(id)
    }
    val n = docTokens.size
    if (n > 0) {
      val doc = lengths.size
      rowIds.add(rowId)
      lengths.add(n)
      totalTokens += n
      val a = docTokens.values
      java.util.Arrays.sort(a, 0, n)
      var i = 0
      while (i < n) {
        var j = i + 1
        while (j < n && a(j) == a(i)) j += 1
        postingDocs(a(i)).add(doc)
        postingFreqs(a(i)).add(j - i)
        i = j
      }
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
    val order = (0 until n).sortWith((x, y) => java.util.Arrays.compareUnsigned(bytes(x), bytes(y)) < 0).toArray
    val fst = new TokenMapWriter
    var totalLength = 0L
    order.indices.foreach { id => fst.add(bytes(order(id)), id.toLong); totalLength += bytes(order(id)).length }
    val docLengths = java.util.Arrays.copyOf(lengths.values, numDocs)
    val avgdl = Bm25.avgdl(totalTokens, numDocs)
    val files = TextIndexFiles.writePartition(storage, dir, partition, allocator)(
      fst.finish(), n, totalLength, rowIds.values, docLengths, numDocs, totalTokens, n,
      id => {
        val docs = postingDocs(order(id))
        PostingEncoder.encode(docs.values, postingFreqs(order(id)).values, docs.size, docLengths,
          Bm25.idf(numDocs, docs.size), avgdl) -> docs.size
      })
    files
  }
}

object TextPartitionBuilder {
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
