package sparklance.format.index.text

/**
 * Lance's BM25 (k1 1.2, b 0.75), in f32 as pylance computes it (docs/format-inverted-index.md):
 * shared by the search and by the writer's block scores, which must agree with it.
 */
object Bm25 {
  val K1 = 1.2f
  val B = 0.75f

  /** ln((N - n + 0.5) / (n + 0.5) + 1) for a token `n` of `numDocs` documents hold. */
  def idf(numDocs: Long, n: Long): Float = Math.log((numDocs - n + 0.5) / (n + 0.5) + 1).toFloat

  /** The weight of `freq` occurrences in a document of `length` tokens. */
  def weight(freq: Int, length: Int, avgdl: Float): Float = {
    val f = freq.toFloat
    val norm = K1 * (1f - B + B * length.toFloat / avgdl)
    (K1 + 1f) * f / (f + norm)
  }

  def avgdl(totalTokens: Long, numDocs: Long): Float = totalTokens.toFloat / numDocs.toFloat
}
