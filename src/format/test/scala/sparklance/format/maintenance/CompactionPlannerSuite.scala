package sparklance.format.maintenance

import com.google.protobuf.{Any => ProtoAny, ByteString}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.InvalidOptionException
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.maintenance.CompactionPlanner.FragmentStats
import sparklance.format.proto.TableProtos.{DataFile, DataFragment, IndexMetadata}

/** The planner against the plans pylance 14.0.2 made (LANCE-MAINTENANCE.md §1.2). */
class CompactionPlannerSuite extends AnyFunSuite {
  private def stats(id: Long, physical: Long, deleted: Long = 0) = FragmentStats(DataFragment.newBuilder().setId(id)
    .setPhysicalRows(physical).addFiles(DataFile.newBuilder().setPath(s"$id.lance").setFileSizeBytes(physical * 10)).build(), deleted)

  // 0:100, 1:100, 2:1000, 3:100, 4:1000 with 20% deleted, 5:100, 6:1000 with one deleted, 7-9:100.
  private val verified = Seq(stats(0, 100), stats(1, 100), stats(2, 1000), stats(3, 100), stats(4, 1000, 200),
    stats(5, 100), stats(6, 1000, 1), stats(7, 100), stats(8, 100), stats(9, 100))

  private def tasks(options: CompactionOptions, fragments: Seq[FragmentStats] = verified, indices: Seq[IndexMetadata] = Nil,
      stable: Boolean = false): Seq[Seq[Long]] =
    CompactionPlanner.plan(1, fragments, indices, stable, options).tasks.map(_.fragmentIds)

  test("the plans pylance made for each option") {
    val t = CompactionOptions(targetRowsPerFragment = 500)
    assert(tasks(t) == Seq(Seq(0, 1), Seq(3, 4, 5), Seq(7, 8, 9)))
    assert(tasks(t.copy(materializeDeletions = false)) == Seq(Seq(0, 1), Seq(7, 8, 9)))
    assert(tasks(t.copy(materializeDeletionsThreshold = 0.5)) == Seq(Seq(0, 1), Seq(7, 8, 9)))
    assert(tasks(t.copy(materializeDeletionsThreshold = 0.0)) == Seq(Seq(0, 1), Seq(3, 4), Seq(5, 6, 7, 8, 9)))
    assert(tasks(t.copy(excludedFragmentIds = Set(8L))) == Seq(Seq(0, 1), Seq(3, 4, 5)))
    assert(tasks(t.copy(maxSourceFragments = Some(3))) == Seq(Seq(0, 1)))
    assert(tasks(t.copy(maxSourceFragments = Some(1))) == Nil)
    assert(tasks(t.copy(maxSourceRows = Some(250))) == Seq(Seq(0, 1)))
    assert(tasks(CompactionOptions()) == Seq((0L to 9L).toSeq))
  }

  test("a threshold of 1.0 or more switches materialization off, and the comparison is strict") {
    val half = Seq(stats(0, 1000, 500))
    assert(tasks(CompactionOptions(targetRowsPerFragment = 500, materializeDeletionsThreshold = 0.5), half) == Nil)
    assert(tasks(CompactionOptions(targetRowsPerFragment = 500, materializeDeletionsThreshold = 0.49), half) == Seq(Seq(0)))
    assert(tasks(CompactionOptions(targetRowsPerFragment = 500, materializeDeletionsThreshold = 1.0), Seq(stats(0, 1000, 1000))) == Nil)
  }

  test("new fragments: max(1, live / target), rows spread evenly") {
    assert(CompactionTask(Nil, 550, 400).outputRows == Seq(550))
    assert(CompactionTask(Nil, 1000, 300).outputRows == Seq(334, 333, 333))
    assert(CompactionTask(Nil, 0, 300).outputRows == Nil)
  }

  private def index(name: String, typeUrl: String, fragments: Int*) = IndexMetadata.newBuilder().setName(name)
    .setIndexDetails(ProtoAny.newBuilder().setTypeUrl(typeUrl))
    .setFragmentBitmap(ByteString.copyFrom(PortableBitmaps.toBytes(RoaringBitmap.bitmapOf(fragments: _*)))).build()

  test("fragments covered by different indices never share a task (pylance's plan of e1)") {
    // 0-4 hold 200 rows (50 of fragment 0 deleted), 5-7 100 rows (3 of fragment 5 deleted); two indices cover 0-4.
    val e1 = Seq(stats(0, 200, 50)) ++ (1L to 4L).map(stats(_, 200)) ++ Seq(stats(5, 100, 3), stats(6, 100), stats(7, 100))
    val indices = Seq(index("b", "/lance.table.BitmapIndexDetails", 0, 1, 2, 3, 4),
      index("v", "/lance.index.pb.VectorIndexDetails", 0, 1, 2, 3, 4))
    assert(tasks(CompactionOptions(targetRowsPerFragment = 400), e1, indices, stable = true) ==
      Seq(Seq(0, 1, 2), Seq(3, 4), Seq(5, 6, 7)))
  }

  test("fragments an index would need remapping for are left alone and reported") {
    val fs = (0L to 5L).map(stats(_, 100))
    val btree = index("id_idx", "/lance.table.BTreeIndexDetails", 0, 1, 2)
    val plan = CompactionPlanner.plan(1, fs, Seq(btree), stableRowIds = true, CompactionOptions(targetRowsPerFragment = 500))
    assert(plan.tasks.map(_.fragmentIds) == Seq(Seq(3, 4, 5)))
    assert(plan.leftAlone.map(_.fragmentId) == Seq(0, 1, 2) && plan.leftAlone.head.reason.contains("'id_idx' (BTree)"))
    // Without stable row ids a bitmap index holds addresses; a zone map never blocks.
    val bitmap = index("cat_idx", "/lance.table.BitmapIndexDetails", 3, 4, 5)
    val zones = index("x_idx", "/lance.table.ZoneMapIndexDetails", 0, 1, 2)
    assert(tasks(CompactionOptions(targetRowsPerFragment = 500), fs, Seq(bitmap, zones)) == Seq(Seq(0, 1, 2)))
    assert(tasks(CompactionOptions(targetRowsPerFragment = 500), fs, Seq(index("u", "/x.UnheardOfIndexDetails", 0, 1, 2, 3, 4, 5))) == Nil)
  }

  test("options come from names and table config; bad names and values are typed errors naming them") {
    val config = Map("lance.compaction.target_rows_per_fragment" -> "300", "lance.compaction.batch_size" -> "10")
    assert(CompactionOptions.resolve(Map.empty, config).targetRowsPerFragment == 300)
    assert(CompactionOptions.resolve(Map("target_rows_per_fragment" -> "500"), config).targetRowsPerFragment == 500)
    assert(intercept[InvalidOptionException](CompactionOptions.resolve(Map("target_rows" -> "5"), Map.empty)).option == "target_rows")
    val zero = intercept[InvalidOptionException](CompactionOptions.resolve(Map("max_source_fragments" -> "0"), Map.empty))
    assert(zero.getMessage.contains("max_source_fragments") && zero.getMessage.contains("greater than 0"))
    val bad = intercept[InvalidOptionException](CompactionOptions.resolve(Map.empty, Map("lance.compaction.materialize_deletions" -> "yes")))
    assert(bad.option == "lance.compaction.materialize_deletions")
  }
}
