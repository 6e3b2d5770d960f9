package sparklance.format.index.vector

/**
 * How a search runs, for EXPLAIN: the index used (None: an exact scan of every fragment), its
 * type, the metric, the number of segments, and the fragments no segment covers (searched
 * exactly and merged).
 */
final case class VectorSearchPlan(
    index: Option[String],
    indexType: Option[VectorIndexType],
    metric: VectorMetric,
    segments: Int,
    uncoveredFragments: Seq[Long]) {
  def indexed: Boolean = index.isDefined
}

/** The answer: the top k nearest first, the plan, and how many partitions were searched in all. */
final case class VectorSearchResult(hits: IndexedSeq[VectorHit], plan: VectorSearchPlan, partitionsSearched: Int)
