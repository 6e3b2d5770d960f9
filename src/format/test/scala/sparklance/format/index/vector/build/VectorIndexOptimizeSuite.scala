package sparklance.format.index.vector.build

import java.nio.file.{Files, Paths}
import org.apache.arrow.memory.RootAllocator
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Using
import sparklance.format.Pylance
import sparklance.format.index.Indices
import sparklance.format.index.vector.{VectorIndexType, VectorMetric}
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * A delta added here to an index pylance built must be what pylance's own optimize_indices adds:
 * same centroids and codebook (or SQ bounds), only the appended fragment, and the same answers
 * from pylance's `nearest` (ids and index distances) as on a twin table pylance optimized; then
 * pylance's validate() passes and its optimize_indices extends the index past our delta.
 */
class VectorIndexOptimizeSuite extends AnyFunSuite {
  private val script = Paths.get("src/format/test/resources/vector/optimized.py")

  for ((kind, metric) <- Seq(VectorIndexType.IvfFlat -> VectorMetric.L2, VectorIndexType.IvfPq -> VectorMetric.Cosine,
      VectorIndexType.IvfSq -> VectorMetric.Dot, VectorIndexType.IvfPq -> VectorMetric.Dot))
    test(s"a delta of a pylance ${kind.name} $metric index answers as pylance's own delta") {
      val dir = Files.createTempDirectory("vector-optimize")
      val (path, twin) = (dir.resolve("t.lance").toString, dir.resolve("twin.lance").toString)
      Pylance.run(script, "make", path, twin, kind.name, metric.name)
      val dataset = new Dataset(LocalStorage, path)
      val read = dataset.snapshot(forWrite = true)
      val steps = VectorIndexOptimize.plan(LocalStorage, read, Nil, None, retrain = false, "test")
      assert(steps.map(s => (s.name, s.removed.size, s.fragments.map(_.getId), s.datasetVersion)) ==
        Seq(("vec_idx", 0, Seq(2L), read.version)))
      val committed = Using.resource(new RootAllocator())(a => VectorIndexOptimize.run(dataset, read, steps, segments = 2, a))
      assert(committed.isDefined)
      // Everything covered now: a second plan has nothing to do.
      assert(VectorIndexOptimize.plan(LocalStorage, dataset.snapshot(), Nil, None, retrain = false, "test").isEmpty)
      val out = Pylance.run(script, "check", path, twin, metric.name).trim.linesIterator.toSeq.last
      assert(out.contains(""""segments": [[0, 1], [2]]"""), out)
      assert(out.contains(""""unindexed": 0""") && out.contains(""""same_centroids": true"""), out)
      assert(out.contains(""""same_ids": 20""") && out.contains(""""same_distances": 20"""), out)
      assert(out.contains(""""pylance_after_ours": [[0, 1], [2], [3]]"""), out)
    }

  test("a merge replaces the newest segments by one over their live fragments and the uncovered ones") {
    val dir = Files.createTempDirectory("vector-optimize")
    val (path, twin) = (dir.resolve("t.lance").toString, dir.resolve("twin.lance").toString)
    Pylance.run(script, "make", path, twin, "IVF_FLAT", "l2")
    // The twin holds pylance's delta over fragment 2: merging the newest segment re-covers it alone.
    val dataset = new Dataset(LocalStorage, twin)
    val read = dataset.snapshot(forWrite = true)
    val before = Indices.parse(read.file.indexSection, twin)
    assert(VectorIndexOptimize.plan(LocalStorage, read, Seq("vec_idx"), Some(1), retrain = false, "test").isEmpty)
    val steps = VectorIndexOptimize.plan(LocalStorage, read, Seq("vec_idx"), Some(2), retrain = false, "test")
    assert(steps.map(s => (s.removed, s.fragments.map(_.getId), s.datasetVersion, s.oneSegment)) ==
      Seq((before, Seq(0L, 1L, 2L), before.head.getDatasetVersion, true)))
    Using.resource(new RootAllocator())(a => VectorIndexOptimize.run(dataset, read, steps, segments = 2, a))
    val after = Indices.parse(dataset.snapshot().file.indexSection, twin)
    assert(after.size == 1 && Indices.coverage(after.head).get.toArray.toSeq == Seq(0, 1, 2))
    assert(after.head.getDatasetVersion == before.head.getDatasetVersion)
    val bad = intercept[IllegalArgumentException](VectorIndexOptimize.plan(LocalStorage, read, Seq("nope"), None, retrain = false, "t"))
    assert(bad.getMessage.contains("no index named 'nope'"))
  }
}
