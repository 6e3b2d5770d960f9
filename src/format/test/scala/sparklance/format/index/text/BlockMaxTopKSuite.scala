package sparklance.format.index.text

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** Block-max top-k equals scoring every posting: the same rows, scores and order, ties and deleted rows included. */
class BlockMaxTopKSuite extends AnyFunSuite {

  /** Every row's score, each query token in query order adding its f32 term, as TextSearch scores. */
  private def exhaustive(parts: Seq[BlockMaxTopK.Part], tokens: Array[Int], idf: Array[Float], avgdl: Float, k: Int,
      keep: Long => Boolean): Seq[TextHit] = {
    val scores = scala.collection.mutable.LinkedHashMap.empty[Long, Float]
    for (t <- tokens if !idf(t).isNaN; part <- parts if part.lists(t) != null) {
      val list = part.lists(t).decode
      list.docs.indices.foreach { i =>
        val row = part.rowIds(list.docs(i))
        scores(row) = scores.getOrElse(row, 0f) + idf(t) * Bm25.weight(list.freqs(i), part.numTokens(list.docs(i)), avgdl)
      }
    }
    scores.toSeq.filter(h => keep(h._1)).map { case (r, s) => TextHit(r, s) }.sortBy(h => (-h.score, h.rowId)).take(k)
  }

  test("block-max top-k equals exhaustive scoring on random partitions: ties, repeated tokens, deleted rows, absent tokens") {
    val r = new Random(11)
    for (round <- 0 until 300) {
      val numTokens = 1 + r.nextInt(5)
      // Few lengths and frequencies: many rows tie.
      val maxLength = 1 + r.nextInt(if (round % 3 == 0) 2 else 30)
      var nextRow = r.nextInt(1000).toLong
      val parts = Seq.fill(1 + r.nextInt(3)) {
        val docs = 1 + r.nextInt(if (round % 5 == 0) 5000 else 700)
        val lengths = Array.fill(docs)(1 + r.nextInt(maxLength))
        // Row ids out of document order, as after a compaction.
        val rowIds = r.shuffle((0 until docs).map(_ => { nextRow += 1 + r.nextInt(3); nextRow })).toArray
        val lists = Array.tabulate(numTokens) { _ =>
          val density = Seq(0.0, 0.002, 0.05, 0.3, 0.9)(r.nextInt(5))
          val held = (0 until docs).filter(_ => r.nextDouble() < density).toArray
          if (held.isEmpty) null
          else {
            val freqs = held.map(_ => if (r.nextInt(20) == 0) 1 + r.nextInt(9) else 1 + r.nextInt(2))
            val e = PostingEncoder.encode(held, freqs, held.length, lengths, 1f, maxLength / 2f)
            new PostingBlocks(e.blocks, held.length, "test")
          }
        }
        BlockMaxTopK.Part(rowIds, lengths, lists)
      }
      val idf = Array.tabulate(numTokens)(_ => if (r.nextInt(8) == 0) Float.NaN else 0.1f + r.nextFloat() * 3)
      val tokens = Array.fill(1 + r.nextInt(4))(r.nextInt(numTokens))
      val deleted = parts.flatMap(_.rowIds).filter(_ => r.nextInt(4) == 0).toSet
      val keep: Long => Boolean = row => !deleted(row)
      val avgdl = 0.5f + r.nextFloat() * maxLength
      for (k <- Seq(1, 3, 10, 100, Int.MaxValue)) {
        val want = exhaustive(parts, tokens, idf, avgdl, k, keep)
        val got = BlockMaxTopK.top(parts, tokens, idf, avgdl, k, keep)
        assert(got == want, s"round $round, k $k, tokens ${tokens.mkString(",")}")
      }
    }
  }

  test("block-max top-k reads fewer blocks than there are when a few rows stand out") {
    val docs = 100000
    val lengths = Array.tabulate(docs)(d => if (d % 10007 == 0) 1 else 20)
    val held = (0 until docs).toArray
    val freqs = held.map(d => if (d % 10007 == 0) 5 else 1)
    val e = PostingEncoder.encode(held, freqs, docs, lengths, 1f, 20f)
    var decoded = 0
    val blocks = new PostingBlocks(e.blocks, docs, "test") {
      override def decode(b: Int): PostingList = { decoded += 1; super.decode(b) }
    }
    val part = BlockMaxTopK.Part(Array.tabulate(docs)(_.toLong), lengths, Array(blocks))
    val got = BlockMaxTopK.top(Seq(part), Array(0), Array(1f), 20f, 5, _ => true)
    assert(got.map(_.rowId) == Seq(0L, 10007L, 20014L, 30021L, 40028L))
    // The 10 blocks holding a standing-out row (their bound ties the fifth best), no other.
    assert(decoded == 10, s"$decoded of ${e.blocks.length} blocks decoded")
  }
}
