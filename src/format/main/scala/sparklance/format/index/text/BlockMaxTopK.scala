package sparklance.format.index.text

import scala.collection.mutable

/**
 * The k best documents of a match of any query token (OR) over the partitions of an index,
 * reading only the posting blocks that may hold one of them, with the scores and order exhaustive
 * scoring gives (ties by row id).
 *
 * Block-max pruning: the document ids of a partition are cut into spans at every block's first
 * and last document, so that in a span each token has at most one block. A span's bound is the sum
 * over those blocks of the token's idf times the BM25 weight of the block's highest frequency in
 * its shortest document (BM25 grows with the frequency and shrinks with the length, in f32 too,
 * each rounding being monotone), the token counted as often as the query repeats it. Spans are
 * scored best bound first; once k rows are found, spans whose bound (with a margin for float
 * rounding) is below the k-th score are left unread. A span is scored exactly: each query token in
 * query order adds its f32 term to the document's sum, as [[TextSearch]] does.
 *
 * The blocks' stored scores are not used as bounds: they are computed with the statistics the
 * segment was built with, which other segments and deletions change.
 */
object BlockMaxTopK {
  /**
   * One partition: its documents' row ids and token counts, and the posting blocks of each
   * distinct query token (null where the partition has none).
   */
  final case class Part(rowIds: Array[Long], numTokens: Array[Int], lists: Array[PostingBlocks])

  // Relative margin above the summed bounds: f32 sums of up to a few dozen terms round far less.
  private val Margin = 1e-5

  /**
   * The `k` best rows, best first. `tokens`: the query's tokens in query order as indices into the
   * distinct tokens (a repeated token counts each time); `idf`: each distinct token's idf, NaN for
   * a token no document holds (it adds nothing); `keep`: whether a row may be in the answer (live,
   * allowed), asked of candidates only.
   */
  def top(parts: Seq[Part], tokens: Array[Int], idf: Array[Float], avgdl: Float, k: Int, keep: Long => Boolean): Seq[TextHit] = {
    if (k <= 0) return Nil
    val distinct = idf.length
    val times = new Array[Int](distinct)
    tokens.foreach(t => times(t) += 1)
    val spans = mutable.ArrayBuffer.empty[Span]
    parts.indices.foreach(p => spans ++= spansOf(p, parts(p), times, idf, avgdl))
    val order = spans.sortBy(-_.bound)
    // Worst of the best k on top: lowest score, then highest row id.
    val best = new java.util.PriorityQueue[TextHit](math.min(k, 1024), (a: TextHit, b: TextHit) =>
      if (a.score != b.score) java.lang.Float.compare(a.score, b.score) else java.lang.Long.compare(b.rowId, a.rowId))
    val decoded = parts.map(p => p.lists.map(l => if (l == null) null else new Array[PostingList](l.blocks.length)))
    val sums = new Array[Array[Float]](parts.size)
    val it = order.iterator
    var done = false
    while (!done && it.hasNext) {
      val span = it.next()
      if (best.size == k && span.bound * (1 + Margin) < best.peek.score) done = true
      else {
        val part = parts(span.part)
        if (sums(span.part) == null) sums(span.part) = new Array[Float](part.rowIds.length)
        val sum = sums(span.part)
        val touched = mutable.ArrayBuffer.empty[Int]
        tokens.foreach { t =>
          val b = span.blocks(t)
          if (b >= 0 && !idf(t).isNaN) {
            val list = {
              val cache = decoded(span.part)(t)
              if (cache(b) == null) cache(b) = part.lists(t).decode(b)
              cache(b)
            }
            var i = 0
            while (i < list.docs.length) {
              val d = list.docs(i)
              if (d >= span.lo && d < span.hi) {
                if (sum(d) == 0f) touched += d
                sum(d) = sum(d) + idf(t) * Bm25.weight(list.freqs(i), part.numTokens(d), avgdl)
              }
              i += 1
            }
          }
        }
        touched.foreach { d =>
          val hit = TextHit(part.rowIds(d), sum(d))
          sum(d) = 0f
          val enters = best.size < k || {
            val worst = best.peek
            hit.score > worst.score || (hit.score == worst.score && hit.rowId < worst.rowId)
          }
          if (enters && keep(hit.rowId)) {
            if (best.size == k) best.poll()
            best.add(hit)
          }
        }
      }
    }
    best.toArray(new Array[TextHit](0)).toSeq.sortBy(h => (-h.score, h.rowId))
  }

  /** Documents [lo, hi) of partition `part`, where token t has block blocks(t) (-1: none), bounded by `bound`. */
  private final class Span(val part: Int, val lo: Int, val hi: Int, val blocks: Array[Int], val bound: Double)

  private def spansOf(p: Int, part: Part, times: Array[Int], idf: Array[Float], avgdl: Float): Seq[Span] = {
    val terms = idf.indices.filter(t => part.lists(t) != null && !idf(t).isNaN && times(t) > 0)
    if (terms.isEmpty) return Nil
    val summaries = terms.map(t => t -> part.lists(t).summarize(part.numTokens)).toMap
    val cuts = {
      val all = mutable.ArrayBuffer.empty[Int]
      summaries.values.foreach { s =>
        s.first.foreach(all += _)
        s.last.foreach(l => all += l + 1)
      }
      all.distinct.sorted.toArray
    }
    // Each token's bound per block.
    val bounds = summaries.map { case (t, s) =>
      t -> Array.tabulate(s.first.length)(b => times(t).toDouble * (idf(t) * Bm25.weight(s.maxFreq(b), s.minLength(b), avgdl)))
    }
    val next = mutable.Map.empty[Int, Int] ++ terms.map(_ -> 0) // each token's first block not before the span
    val spans = mutable.ArrayBuffer.empty[Span]
    var c = 0
    while (c + 1 < cuts.length) {
      val lo = cuts(c)
      val blocks = Array.fill(idf.length)(-1)
      var bound = 0.0
      terms.foreach { t =>
        val s = summaries(t)
        var b = next(t)
        while (b < s.last.length && s.last(b) < lo) b += 1
        next(t) = b
        if (b < s.first.length && s.first(b) <= lo) { blocks(t) = b; bound += bounds(t)(b) }
      }
      if (bound > 0) spans += new Span(p, lo, cuts(c + 1), blocks, bound)
      c += 1
    }
    spans.toSeq
  }
}
