package sparklance.format.index.vector

/**
 * A nearest-neighbour query, with pylance's `nearest` options: `nprobes` partitions per segment
 * (None: pylance's Auto, [[AutoProbes]]), `refineFactor` (the index returns k · r candidates whose
 * exact distances then decide), `metric` (None: the index's, or l2 without an index; another than
 * the index's means an exact scan), `filter` (a prefilter on row ids as the index stores them: row
 * addresses, or stable row ids on tables with them) and `useIndex` = false for an exact scan.
 */
final case class VectorQuery(
    column: String,
    vector: Array[Float],
    k: Int,
    nprobes: Option[Int] = None,
    refineFactor: Option[Int] = None,
    metric: Option[VectorMetric] = None,
    filter: Option[Long => Boolean] = None,
    useIndex: Boolean = true) {
  require(k > 0, s"k must be positive, not $k")
  nprobes.foreach(n => require(n > 0, s"nprobes must be positive, not $n"))
  refineFactor.foreach(r => require(r > 0, s"refine_factor must be positive, not $r"))
}
