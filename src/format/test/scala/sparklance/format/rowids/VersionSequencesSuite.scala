package sparklance.format.rowids

import scala.jdk.CollectionConverters._
import scala.util.Random
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.RowIdProtos.{RowDatasetVersionRun, RowDatasetVersionSequence}

class VersionSequencesSuite extends AnyFunSuite {
  private val source = "test versions"

  private def bytes(values: Int*): Array[Byte] = values.map(_.toByte).toArray

  /** (span start, span end, version) of each run, for runs whose span is a Range. */
  private def runs(encoded: Array[Byte]): Seq[(Long, Long, Long)] =
    RowDatasetVersionSequence.parseFrom(encoded).getRunsList.asScala.map { run =>
      (run.getSpan.getRange.getStart, run.getSpan.getRange.getEnd, run.getVersion)
    }.toSeq

  test("golden: 10 rows written at version 1, as pylance writes created_at and last_updated_at") {
    // field 1 (run, len 8) { field 1 (span, len 4) { range { end 10 } }, field 2 (version) = 1 }
    val pylance = bytes(10, 8, 10, 4, 10, 2, 16, 10, 16, 1)
    assert(VersionSequences.uniform(10, 1).sameElements(pylance))
    assert(VersionSequences.encode(Array.fill(10)(1L)).sameElements(pylance))
    assert(VersionSequences.decode(pylance, source).sameElements(Array.fill(10)(1L)))
  }

  test("golden: after a compaction pylance's spans are masked row id segments; only their length counts") {
    // 40 rows, update i = 5 (version 2), delete i % 3 = 0, compact: 25 rows from the first
    // fragment (span RangeWithBitmap(1, 39)), then the updated row (span Range(0, 1))
    val createdAt = bytes(10, 17, 10, 13, 26, 11, 8, 1, 16, 39, 26, 5, 203, 182, 109, 219, 54, 16, 1,
      10, 8, 10, 4, 10, 2, 16, 1, 16, 1)
    val lastUpdatedAt = bytes(10, 17, 10, 13, 26, 11, 8, 1, 16, 39, 26, 5, 203, 182, 109, 219, 54, 16, 1,
      10, 8, 10, 4, 10, 2, 16, 1, 16, 2)
    assert(VersionSequences.decode(createdAt, source).sameElements(Array.fill(26)(1L)))
    assert(VersionSequences.decode(lastUpdatedAt, source).sameElements(Array.fill(25)(1L) :+ 2L))
    assert(VersionSequences.count(lastUpdatedAt, source) == 26)
  }

  test("one run per maximal stretch of equal versions, spans as fragment offsets") {
    val versions = Array(1L, 1L, 2L, 2L, 2L, 1L, 3L)
    val encoded = VersionSequences.encode(versions)
    assert(runs(encoded) == Seq((0L, 2L, 1L), (2L, 5L, 2L), (5L, 6L, 1L), (6L, 7L, 3L)))
    assert(VersionSequences.decode(encoded, source).sameElements(versions))
    assert(VersionSequences.count(encoded, source) == versions.length)
  }

  test("uniform versions are one run; no rows are no runs") {
    assert(runs(VersionSequences.uniform(1000, 7)) == Seq((0L, 1000L, 7L)))
    assert(VersionSequences.decode(VersionSequences.uniform(1000, 7), source).sameElements(Array.fill(1000)(7L)))
    assert(VersionSequences.uniform(0, 7).isEmpty)
    assert(VersionSequences.encode(Array.emptyLongArray).isEmpty)
    assert(VersionSequences.decode(Array.emptyByteArray, source).isEmpty)
    intercept[IllegalArgumentException](VersionSequences.uniform(-1, 7))
  }

  test("random version arrays round trip with as many runs as stretches") {
    val rnd = new Random(777)
    for (_ <- 0 until 2000) {
      val stretches = Array.fill(rnd.nextInt(40)) {
        val version = (1 + rnd.nextInt(3)).toLong
        Array.fill(1 + rnd.nextInt(50))(version)
      }
      // single rows updated later break stretches up
      val versions = stretches.flatten.map(v => if (rnd.nextInt(20) == 0) v + 100 else v)
      val encoded = VersionSequences.encode(versions)
      val expectedRuns = versions.indices.count(i => i == 0 || versions(i) != versions(i - 1))
      assert(runs(encoded).size == expectedRuns)
      assert(VersionSequences.decode(encoded, source).sameElements(versions))
    }
  }

  test("a run without a span, or garbage bytes, is corrupt") {
    val noSpan = RowDatasetVersionSequence.newBuilder()
      .addRuns(RowDatasetVersionRun.newBuilder().setVersion(3)).build().toByteArray
    val e = intercept[CorruptFileException](VersionSequences.decode(noSpan, source))
    assert(e.getMessage.contains(source) && e.getMessage.contains("no span"), e.getMessage)
    intercept[CorruptFileException](VersionSequences.decode(bytes(10, 8, 10, 4), source))
    // a span whose range ends before it starts
    intercept[CorruptFileException](VersionSequences.decode(bytes(10, 8, 10, 6, 10, 4, 8, 9, 16, 3), source))
  }

  test("an unknown span kind or field is unsupported") {
    val newSpanKind = bytes(10, 6, 10, 2, 0x32, 0, 16, 1)
    intercept[UnsupportedFeatureException](VersionSequences.decode(newSpanKind, source))
    val runExtra = VersionSequences.uniform(3, 1).updated(1, 10.toByte) ++ Array[Byte](0x18, 1)
    intercept[UnsupportedFeatureException](VersionSequences.decode(runExtra, source))
    val sequenceExtra = VersionSequences.uniform(3, 1) ++ Array[Byte](0x10, 1)
    intercept[UnsupportedFeatureException](VersionSequences.decode(sequenceExtra, source))
  }
}
