package sparklance.format.maintenance

import java.nio.file.{Files, Path, Paths}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.Pylance
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * Differential test against pylance: one table (LANCE-MAINTENANCE.md §1.2's layout), copied; pylance
 * compacts one copy with `compact_files`, we compact the other with the same options. Both must end
 * with the same fragments (ids, rows), the same rows in the same order and, with stable row ids, the
 * same `_rowid` and versions of every row, all as pylance reads them.
 */
class CompactionOracleSuite extends AnyFunSuite {
  private val script = Paths.get("src/format/test/resources/compaction/oracle.py")

  private val variants: Seq[(String, String, CompactionOptions)] = Seq(
    ("defaults", """{"target_rows_per_fragment": 500}""", CompactionOptions(targetRowsPerFragment = 500)),
    ("no_materialize", """{"target_rows_per_fragment": 500, "materialize_deletions": false}""",
      CompactionOptions(targetRowsPerFragment = 500, materializeDeletions = false)),
    ("threshold_half", """{"target_rows_per_fragment": 500, "materialize_deletions_threshold": 0.5}""",
      CompactionOptions(targetRowsPerFragment = 500, materializeDeletionsThreshold = 0.5)),
    ("threshold_zero", """{"target_rows_per_fragment": 500, "materialize_deletions_threshold": 0.0}""",
      CompactionOptions(targetRowsPerFragment = 500, materializeDeletionsThreshold = 0.0)),
    ("excluded", """{"target_rows_per_fragment": 500, "excluded_fragment_ids": [8]}""",
      CompactionOptions(targetRowsPerFragment = 500, excludedFragmentIds = Set(8L))),
    ("three_sources", """{"target_rows_per_fragment": 500, "max_source_fragments": 3}""",
      CompactionOptions(targetRowsPerFragment = 500, maxSourceFragments = Some(3))),
    ("split", """{"target_rows_per_fragment": 300}""", CompactionOptions(targetRowsPerFragment = 300)),
    ("one_bin", "{}", CompactionOptions()))

  private def copy(from: Path, to: Path): Unit = Files.walk(from).iterator().asScala.foreach { p =>
    Files.copy(p, to.resolve(from.relativize(p).toString))
  }

  for (stable <- Seq(false, true)) test(s"our compaction equals pylance's compact_files (stable row ids: $stable)") {
    val root = Files.createTempDirectory("compaction-oracle")
    Pylance.run(script, "build", root.toString, stable.toString)
    Pylance.run(script, "compact", root.toString, variants.map { case (name, json, _) => s""""$name": $json""" }.mkString("{", ", ", "}"))
    val ours = variants.map { case (name, _, options) =>
      val path = root.resolve(s"ours-$name.lance")
      copy(root.resolve("base.lance"), path)
      new Compaction(new Dataset(LocalStorage, path.toString)).run(options)
      path
    }
    val theirs = variants.map { case (name, _, _) => root.resolve(s"pylance-$name.lance") }
    val described = Pylance.run(script, ("describe" +: (ours ++ theirs).map(_.toString)): _*).trim.linesIterator.toSeq
    assert(described.size == 2 * variants.size)
    val (mine, pylance) = described.splitAt(variants.size)
    for (((name, _, _), (m, p)) <- variants.zip(mine.zip(pylance))) {
      assert(m.contains("\"strings_ok\": true"), s"$name: rows of our compaction lost their values")
      assert(m == p, s"$name: our compaction differs from pylance's\nours:    ${m.take(300)}\npylance: ${p.take(300)}")
    }
  }
}
