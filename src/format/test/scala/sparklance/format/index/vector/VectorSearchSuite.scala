package sparklance.format.index.vector

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import java.nio.file.{Files, Path, Paths}
import org.apache.arrow.memory.RootAllocator
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{Pylance, UnsupportedFeatureException}
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * Vector search against pylance 14.0.2's `nearest` on the same tables and indices:
 * vector_tables.py writes tables (3,000 clustered 16-dim rows in fragments of 1,000, 8
 * partitions) with IVF_FLAT, IVF_PQ and IVF_SQ indices for l2, cosine and dot, data storage
 * versions 2.0, 2.1 and 2.2 (index files follow the table's version), and records pylance's answers
 * for 4 queries x (nprobes 1, 3; nprobes 2 with refine 2; a prefilter), Auto probing, after
 * the build, after deleting rows and after appending an unindexed fragment; two tables have stable
 * row ids; one has 4-bit PQ codes; one has two segments (a delta of optimize_indices), then an
 * uncovered fragment, searched with Auto and a filter passing 1 row in 40. Every answer must have
 * pylance's ids in pylance's order, distances within 1e-4 (SQ: see the tie rule below).
 */
class VectorSearchSuite extends AnyFunSuite {
  private lazy val dir: Path = {
    val d = Files.createTempDirectory("vector-search")
    Pylance.run(Paths.get(getClass.getResource("/vector/vector_tables.py").toURI), d.toString)
    d
  }
  private lazy val cases: Seq[JsonNode] = new ObjectMapper().readTree(dir.resolve("cases.json").toFile).elements().asScala.toSeq

  private val rowIdIndices = scala.collection.mutable.Map.empty[(String, Long), sparklance.format.rowids.RowIdIndex]
  private def rowIdIndex(table: String, version: Long) = rowIdIndices.getOrElseUpdate((table, version),
    sparklance.format.rowids.RowLineage.index(LocalStorage, dataset(table).snapshot(Some(version))))

  private def tieProne(table: String) = table.startsWith("sq_") || table.startsWith("pq4_")

  private def dataset(name: String) = new Dataset(LocalStorage, dir.resolve(name).toString)

  private def check(table: String): Unit = {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    val mine = cases.filter(_.get("table").asText == table)
    var tiesAllowed = 0
    assert(mine.nonEmpty)
    val failures = for ((version, group) <- mine.groupBy(_.get("version").asLong).toSeq.sortBy(_._1); c <- group) yield {
      val search = new VectorSearch(LocalStorage, dataset(table).snapshot(Some(version)), "vec", allocator)
      try {
        def opt(key: String) = Option(c.get(key)).filterNot(_.isNull)
        val allowed = opt("filter").map(_.elements().asScala.map(_.asLong).toSet)
        val q = VectorQuery("vec", c.get("query").elements().asScala.map(_.floatValue).toArray, c.get("k").asInt,
          nprobes = opt("nprobes").map(_.asInt), refineFactor = opt("refine").map(_.asInt),
          metric = opt("metric").map(m => VectorMetric.parse(m.asText)), filter = allowed.map(s => (id: Long) => s.contains(id)))
        val got = search.search(q).hits
        // Each hit's address is where its row is in this version.
        val addresses = if (search.snapshot.stableRowIds) got.map(h => rowIdIndex(table, version).address(h.rowId)) else got.map(_.rowId)
        assert(got.map(_.address) == addresses)
        val wantIds = c.get("ids").elements().asScala.map(_.asLong).toSeq
        val wantD = c.get("distances").elements().asScala.map(_.floatValue).toSeq
        def close(a: Float, b: Float) = math.abs(a - b) <= 1e-4 * math.max(1f, math.abs(b))
        val ok = got.map(_.rowId) == wantIds && got.map(_.distance).zip(wantD).forall { case (a, b) => close(a, b) }
        // SQ distances (integers times a step) and 4-bit PQ distances (sums of 16-entry tables) tie
        // often, and pylance keeps an arbitrary one of the rows tied at the k-th place (its
        // sub-index sorts by distance only): the answer then differs by that row (a tie swap: same
        // distances), or, when exact distances follow, by the candidate it let in.
        val sameDistances = got.size == wantD.size && got.map(_.distance).zip(wantD).forall { case (a, b) => close(a, b) }
        val common = got.map(_.rowId).toSet.intersect(wantIds.toSet).size
        if (!ok && tieProne(table) && (sameDistances || common >= wantIds.size - 1)) { tiesAllowed += 1; None }
        else if (ok) None else Some(s"v$version nprobes=${q.nprobes} refine=${q.refineFactor} metric=${q.metric} filter=${allowed.isDefined}:\n" +
          s"  pylance ${wantIds.zip(wantD).mkString(" ")}\n  ours    ${got.map(h => (h.rowId, h.distance)).mkString(" ")}")
      } finally search.close()
    }
    val failed = failures.flatten
    assert(tiesAllowed <= mine.size / 5, s"$tiesAllowed answers differ at a tie")
    if (tiesAllowed > 0) info(s"$tiesAllowed of ${mine.size} answers differ from pylance's at a tie of quantized distances")
    assert(failed.isEmpty, s"${failed.size} of ${mine.size} answers differ from pylance's:\n${failed.take(4).mkString("\n")}")
    assert(allocator.getAllocatedMemory == 0)
    allocator.close()
  }

  for (t <- Seq("flat_l2", "flat_cosine", "flat_dot", "pq_l2", "pq_cosine", "pq_dot", "sq_l2", "sq_cosine", "sq_dot",
      "pq_l2_stable", "flat_cosine_stable", "pq4_l2", "segments"))
    test(s"$t: pylance's nearest, after build, deletes and an append") { check(t) }

  test("the plan names the index and the uncovered fragments; another metric is an exact scan") {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    val ds = dataset("pq_l2")
    val search = new VectorSearch(LocalStorage, ds.snapshot(), "vec", allocator)
    try {
      val plan = search.plan(None)
      assert(plan.index.contains("vec_idx") && plan.indexType.contains(VectorIndexType.IvfPq) && plan.metric == VectorMetric.L2)
      assert(plan.segments == 1 && plan.uncoveredFragments == Seq(3L))
      assert(search.plan(Some(VectorMetric.Dot)) == VectorSearchPlan(None, None, VectorMetric.Dot, 0, Seq(0L, 1L, 2L, 3L)))
      val first = search.plan(None, useIndex = true)
      val before = search.search(VectorQuery("vec", Array.fill(16)(0.5f), 5, nprobes = Some(2)))
      assert(before.partitionsSearched == 2 && before.plan == first && before.hits.size == 5)
    } finally { search.close(); allocator.close() }
    val original = new VectorSearch(LocalStorage, ds.snapshot(Some(2)), "vec", allocator)
    try assert(original.plan(None).uncoveredFragments.isEmpty) finally original.close()
  }

  test("HNSW sub-indices, non-float32 vectors and unknown metrics are refused by name") {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    try {
      val hnsw = new VectorSearch(LocalStorage, dataset("hnsw").snapshot(), "vec", allocator)
      try {
        val e = intercept[UnsupportedFeatureException](hnsw.search(VectorQuery("vec", new Array[Float](16), 3, nprobes = Some(1))))
        assert(e.getMessage.contains("IVF_HNSW_SQ") && e.getMessage.contains("HNSW"))
      } finally hnsw.close()
      val f64 = intercept[UnsupportedFeatureException](new VectorSearch(LocalStorage, dataset("f64").snapshot(), "vec", allocator))
      assert(f64.getMessage.contains("'vec'") && f64.getMessage.contains("float32"))
      assert(intercept[UnsupportedFeatureException](VectorMetric.parse("hamming")).getMessage.contains("hamming"))
      assert(VectorMetric.parse("COSINE") == VectorMetric.Cosine && VectorMetric.parse("Dot") == VectorMetric.Dot)
    } finally allocator.close()
  }

  test("the cache keeps opened segments per manifest entry across searches and versions; evicted ones are opened again") {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    val ds = dataset("segments")
    val latest = ds.snapshot()
    val q = VectorQuery("vec", Array.fill(16)(0.25f), 6, nprobes = Some(3), refineFactor = Some(2))
    def search(snapshot: sparklance.format.table.Snapshot, cache: VectorIndexCache) = {
      val s = new VectorSearch(LocalStorage, snapshot, "vec", allocator, cache)
      try s.search(q).hits finally s.close()
    }
    try {
      val none = new VectorIndexCache(0) // every segment evicted, and closed, at its release
      val opened = search(latest, none)
      assert(none.size == 0 && none.bytes == 0)
      val cache = new VectorIndexCache(VectorIndexCache.DefaultCapacityBytes)
      assert(search(latest, cache) == opened)
      assert(cache.size == 2 && cache.bytes > 0) // two segments, their probed partitions decoded
      val held = cache.bytes
      assert(search(latest, cache) == opened && cache.size == 2 && cache.bytes == held)
      // The version before the last append holds the same two entries: its search finds them cached.
      val before = ds.snapshot(Some(latest.version - 1))
      assert(search(before, cache) == search(before, none) && cache.size == 2)
      cache.clear()
      assert(cache.size == 0 && search(latest, cache) == opened)
    } finally allocator.close()
  }

  test("exact distances in pylance's units") {
    val q = Array(1f, 2f, 2f)
    val x = Array(2f, 0f, 2f)
    assert(VectorMetric.L2.distance(q, x) == 5f)
    assert(math.abs(VectorMetric.Cosine.distance(q, x) - (1 - 6 / (3 * math.sqrt(8)))) < 1e-6)
    assert(VectorMetric.Dot.distance(q, x) == 1f - 6f)
  }
}
