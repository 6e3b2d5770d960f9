package sparklance.format.table

import java.lang.management.ManagementFactory
import java.nio.file.{Files, Path, Paths}
import java.security.MessageDigest
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, FieldVector, LargeVarBinaryVector, VarCharVector}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.Pylance
import sparklance.format.file.RowBytes
import sparklance.format.io.LocalStorage
import sparklance.format.maintenance.{Compaction, CompactionOptions}

/**
 * Scan batches are bounded by the bytes values decode to, not by the bytes they are stored in:
 * pylance stores 1 MiB values of a repeated 16-byte pattern (and 64 KiB strings of a repeated
 * 16-letter pattern) in a few hundred bytes each (full-zip pages, each value zstd-compressed on its
 * own), 2 fragments of 150 rows, 320 MB of decoded data in 80 KB of files; and values that repeat
 * once each (dictionary pages, and constant ones in 2.2), 320 MB in 11 MB. Full scans, projections,
 * scattered rows and compaction hold about one batch of it at a time: measured here batch by batch
 * and by the allocator's peak, and in a JVM whose heap is a third of what the table decodes to.
 */
class LargeValueBatchesSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val script = Paths.get("src/format/test/resources/large_values/values.py")
  private val rows = 300
  private val perFile = 150
  private val root = Files.createTempDirectory("large-values")
  private val budget = 8L << 20
  /** The most one row decodes to, as RowBytes counts it. */
  private val largestRow = (1L << 20) + (64L << 10) + 3 * 8

  /** Per kind of values and version, the table pylance wrote and every row's (sha1 of img, sha1 of note) by id. */
  private val tables = scala.collection.mutable.Map.empty[(String, String), (Path, Map[Long, (String, String)])]
  private def table(kind: String, version: String): (Path, Map[Long, (String, String)]) = tables.getOrElseUpdate(kind -> version, {
    val path = root.resolve(s"${kind}_$version.lance")
    val command = if (kind == "repeated") "write_repeated" else "write"
    path -> digests(Pylance.run(script, command, path.toString, version, rows.toString, perFile.toString))
  })

  private def digests(json: String): Map[Long, (String, String)] =
    """\[(\d+), "(\w+)", "(\w+)"\]""".r.findAllMatchIn(json).map(m => m.group(1).toLong -> (m.group(2), m.group(3))).toMap

  private def sha1(bytes: Array[Byte]): String = MessageDigest.getInstance("SHA-1").digest(bytes).map("%02x".format(_)).mkString

  override def afterAll(): Unit = LocalStorage.deleteRecursively(root.toString)

  /**
   * Scans every fragment of `path` through `scanner` (projected `fields`), checks each batch holds
   * about `budget` of decoded data (one row more at most) and every value against pylance's; returns
   * the ids read and the allocator's peak.
   */
  private def scan(path: Path, fields: Seq[String], expected: Map[Long, (String, String)])(
      scanner: (Snapshot, DataFragment, Seq[LanceField], RootAllocator) => FragmentScanner): (Seq[Long], Long) =
    Using.resource(new RootAllocator()) { allocator =>
      val snapshot = new Dataset(LocalStorage, path.toString).snapshot()
      val projected = fields.map(f => snapshot.schema.field(f).get)
      val ids = Seq.newBuilder[Long]
      for (fragment <- snapshot.fragments) Using.resource(scanner(snapshot, fragment, projected, allocator)) { s =>
        s.foreach { batch =>
          try {
            val bytes = batch.vectors.map(v => RowBytes(v, 0, batch.numRows)).sum
            assert(bytes <= budget + largestRow, s"a batch of ${batch.numRows} rows holds $bytes bytes")
            val byName = projected.map(_.name).zip(batch.vectors).toMap[String, FieldVector]
            val id = byName.get("id").map(_.asInstanceOf[BigIntVector])
            for (i <- 0 until batch.numRows) {
              val rowId = id.map(_.get(i)).getOrElse(fragment.getId * perFile + Integer.toUnsignedLong(batch.offsets(i)))
              ids += rowId
              byName.get("img").foreach(v => assert(sha1(v.asInstanceOf[LargeVarBinaryVector].get(i)) == expected(rowId)._1, s"img of $rowId"))
              byName.get("note").foreach(v => assert(sha1(v.asInstanceOf[VarCharVector].get(i)) == expected(rowId)._2, s"note of $rowId"))
            }
          } finally batch.close()
        }
      }
      (ids.result(), allocator.getPeakMemoryAllocation)
    }

  private type DataFragment = sparklance.format.proto.TableProtos.DataFragment

  for (kind <- Seq("compressed", "repeated"); version <- Seq("2.1", "2.2")) {
    test(s"scans of pylance's $kind large values ($version) decode batches of about read_batch_bytes") {
      val (path, expected) = table(kind, version)
      val stored = Files.walk(path.resolve("data")).iterator().asScala.filter(Files.isRegularFile(_)).map(Files.size).sum
      assert(stored < rows * (40L << 10), s"pylance stored the values in $stored bytes, so they do not test what they decode to")
      for (fields <- Seq(Seq("id", "img", "note"), Seq("note", "img"), Seq("img"))) {
        val (ids, peak) = scan(path, fields, expected) { (snapshot, fragment, projected, allocator) =>
          new FragmentScanner(LocalStorage, snapshot.files, fragment, projected, allocator, 0, fragment.getPhysicalRows,
            batchBytes = budget)
        }
        assert(ids == (0L until rows), fields)
        assert(peak < 4 * budget, s"$fields: the allocator held $peak bytes at once")
      }
    }

    test(s"scattered rows of pylance's $kind large values ($version) come in batches of about read_batch_bytes") {
      val (path, expected) = table(kind, version)
      // Rows named one by one (as change data names them), and rows data skipping kept (runs of 3 rows).
      val named = RoaringBitmap.bitmapOf((0 until perFile by 3): _*)
      val kept = RoaringBitmap.bitmapOf((0 until perFile).filter(_ % 10 < 3): _*)
      for ((only, within) <- Seq((Some(named), None), (None, Some(kept)))) {
        val (ids, peak) = scan(path, Seq("id", "img", "note"), expected) { (snapshot, fragment, projected, allocator) =>
          new FragmentScanner(LocalStorage, snapshot.files, fragment, projected, allocator, 0, fragment.getPhysicalRows,
            only = only, batchBytes = budget, within = within)
        }
        val chosen = only.orElse(within).get.toArray.toSeq.map(_.toLong)
        assert(ids == Seq(0L, perFile.toLong).flatMap(base => chosen.map(base + _)))
        assert(peak < 4 * budget, s"the allocator held $peak bytes at once")
      }
    }
  }

  test("a JVM whose heap is a third of the data scans and compacts pylance's compressed large values") {
    val (original, expected) = table("compressed", "2.2")
    val path = root.resolve("compacted.lance")
    Files.walk(original).iterator().asScala.foreach(p => Files.copy(p, path.resolve(original.relativize(p).toString)))
    val java = Paths.get(sys.props("java.home"), "bin", "java").toString
    val inherited = ManagementFactory.getRuntimeMXBean.getInputArguments.asScala.filter(a => a.startsWith("--add-opens") || a.startsWith("-D"))
      .filterNot(_.startsWith("-Djava.io.tmpdir"))
    val command = (java +: inherited.toSeq) ++ Seq("-Xmx112m", "-cp", sys.props("java.class.path"),
      LargeValueScanMain.getClass.getName.stripSuffix("$"), path.toString)
    val child = new ProcessBuilder(command: _*).redirectErrorStream(true).start()
    val output = new String(child.getInputStream.readAllBytes(), "UTF-8")
    assert(child.waitFor() == 0, output.takeRight(4000))
    assert(output.contains(s"RESULT rows=$rows bytes=${rows * ((1L << 20) + (64L << 10))}"), output.takeRight(4000))
    // The compaction committed one fragment of every row, which pylance reads value for value.
    assert(new Dataset(LocalStorage, path.toString).snapshot().fragments.map(_.getPhysicalRows) == Seq(rows.toLong))
    assert(digests(Pylance.run(script, "digests", path.toString)) == expected)
  }
}

/** The child JVM of LargeValueBatchesSuite: scans a table with the default batch size, then compacts it. */
object LargeValueScanMain {
  def main(args: Array[String]): Unit = {
    val dataset = new Dataset(LocalStorage, args(0))
    val snapshot = dataset.snapshot()
    var (rows, bytes) = (0L, 0L)
    Using.resource(new RootAllocator()) { allocator =>
      for (read <- snapshot.plan()) Using.resource(read.open(LocalStorage, allocator)) { scanner =>
        scanner.foreach { batch =>
          try {
            rows += batch.numRows
            bytes += batch.vectors.drop(1).map {
              case v: LargeVarBinaryVector => (0 until batch.numRows).map(v.get(_).length.toLong).sum
              case v: VarCharVector => (0 until batch.numRows).map(v.get(_).length.toLong).sum
              case _ => 0L
            }.sum
          } finally batch.close()
        }
      }
    }
    new Compaction(dataset).run(CompactionOptions())
    println(s"RESULT rows=$rows bytes=$bytes")
  }
}
