package sparklance.spark.search

/**
 * Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) as LanceDB's `RRFReranker`
 * computes it: a row's score is the sum, over the ranked lists that hold it, of 1 / (rank + k),
 * rank counted from 1 (the best row of a list adds 1 / (1 + k)), summed in double precision and
 * kept as a float32, as LanceDB's `_relevance_score` is. Rows sort by score, highest first; ties
 * (common: the first of one list only and the first of the other only) by row id, where LanceDB
 * keeps the order of its concatenated lists.
 */
object ReciprocalRankFusion {
  /** A fused row: its score and, per list, its value there (null where that list lacks it). */
  final case class Fused(rowId: Long, address: Long, score: Float, values: Seq[java.lang.Float])

  /** The `limit` best rows of `lists` (each best first, a row at most once in each) fused with constant `k`. */
  def fuse(lists: Seq[Seq[HitRows.Hit]], k: Int, limit: Int): Seq[Fused] = {
    require(k > 0, s"the constant of reciprocal rank fusion must be positive, got $k")
    val scores = scala.collection.mutable.LinkedHashMap.empty[Long, Double]
    val addresses = scala.collection.mutable.Map.empty[Long, Long]
    for (list <- lists; (hit, index) <- list.zipWithIndex) {
      scores(hit.rowId) = scores.getOrElse(hit.rowId, 0.0) + 1.0 / (index + 1 + k)
      addresses(hit.rowId) = hit.address
    }
    val byList = lists.map(_.map(h => h.rowId -> h.value).toMap)
    scores.toSeq.map { case (id, score) => (id, score.toFloat) }
      .sortBy { case (id, score) => (-score, id) }
      .take(limit)
      .map { case (id, score) => Fused(id, addresses(id), score, byList.map(_.get(id).map(Float.box).orNull)) }
  }
}
