package sparklance.format.maintenance

import com.fasterxml.jackson.databind.node.BooleanNode
import java.nio.file.{Files, Paths}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * A pylance table with BTREE, BITMAP, ZONEMAP and IVF_PQ indices, compacted by us: pylance's
 * indexed queries must keep returning what a scan returns, with the indices still in use.
 * Coverage follows LANCE-MAINTENANCE.md §1.6: on stable-row-id tables row-id indices move to
 * the new fragments and zone maps drop them; fragments an index would need remapping for stay.
 */
class CompactionIndexSuite extends AnyFunSuite {
  private val script = Paths.get("src/format/test/resources/compaction/indexed.py")

  for (stable <- Seq(false, true)) test(s"pylance's indexed queries stay right after our compaction (stable row ids: $stable)") {
    val path = Files.createTempDirectory("compaction-index").resolve("t.lance").toString
    Pylance.run(script, "build", path, stable.toString)
    val before = Pylance.lastJson(Pylance.run(script, "check", path))
    val result = new Compaction(new Dataset(LocalStorage, path)).run(CompactionOptions(targetRowsPerFragment = 1000))
    val after = Pylance.lastJson(Pylance.run(script, "check", path))

    assert(!after.findValues("equal").isEmpty && !after.findValues("equal").contains(BooleanNode.FALSE), s"an indexed query differs from a scan after compaction:\n$after")
    assert(!after.findValues("index_used").contains(BooleanNode.FALSE), s"an index is no longer used after compaction:\n$after")
    assert(after.get("count") == before.get("count"))
    assert(result.version.isDefined)
    val blocked = if (stable) 0L to 4L else 0L to 9L
    assert(result.leftAlone.map(_.fragmentId) == blocked, result.leftAlone)
    assert(Pylance.ints(after, "id_idx") == Seq(0, 1, 2, 3, 4))
    if (stable) {
      // 5-9 became fragment 13 and 10-12 fragment 14 (reserved after the highest id, 12).
      assert(Pylance.ints(after, "fragments") == Seq(0, 1, 2, 3, 4, 13, 14))
      assert(Pylance.ints(after, "cat_idx") == Seq(0, 1, 2, 3, 4, 13))
      assert(Pylance.ints(after, "v_idx") == Seq(0, 1, 2, 3, 4, 13))
      assert(Pylance.ints(after, "x_idx") == Seq(0, 1, 2, 3, 4))
    } else {
      assert(Pylance.ints(after, "fragments") == Seq(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13))
      assert(Pylance.ints(after, "cat_idx") == Seq(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
    }
  }
}
