package sparklance.format.rowids

import scala.jdk.CollectionConverters._
import scala.util.Random
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.RowIdProtos.RowIdSequence
import sparklance.format.proto.RowIdProtos.U64Segment.SegmentCase

class RowIdSequencesSuite extends AnyFunSuite {
  private val source = "test row ids"

  private def kinds(bytes: Array[Byte]): Seq[SegmentCase] =
    RowIdSequence.parseFrom(bytes).getSegmentsList.asScala.map(_.getSegmentCase).toSeq

  private def bytes(values: Int*): Array[Byte] = values.map(_.toByte).toArray

  private def oneSegment(ids: Array[Long]): Array[Byte] =
    RowIdSequence.newBuilder().addSegments(U64Segments.encode(ids)).build().toByteArray

  private def roundTrip(ids: Array[Long]): Array[Byte] = {
    val encoded = RowIdSequences.encode(ids)
    assert(RowIdSequences.decode(encoded, source).sameElements(ids))
    assert(RowIdSequences.count(encoded) == ids.length)
    encoded
  }

  // ----- bytes pylance 14.0.2 wrote (inline_row_ids from FragmentMetadata.to_json()) -----

  test("golden: Range(0, 10) is the sequence pylance writes for 10 fresh rows") {
    // field 1 (segment, len 4) { field 1 (range, len 2) { start 0 omitted, field 2 (end) = 10 } }
    val pylance = bytes(0x0a, 0x04, 0x0a, 0x02, 0x10, 0x0a)
    assert(RowIdSequences.range(0, 10).sameElements(pylance))
    assert(RowIdSequences.encode((0L until 10L).toArray).sameElements(pylance))
    assert(RowIdSequences.decode(pylance, source).sameElements(0L until 10L))
  }

  test("golden: the segments pylance chose for updated rows are the ones we choose") {
    // update where i % 7 = 0 on 100 rows: the new fragment holds ids 0, 7, ..., 98 (RangeWithBitmap)
    val step7 = bytes(10, 19, 26, 17, 16, 99, 26, 13, 129, 64, 32, 16, 8, 4, 2, 129, 64, 32, 16, 8, 4)
    val step7Ids = (0L until 100L by 7).toArray
    assert(kinds(step7) == Seq(SegmentCase.RANGE_WITH_BITMAP))
    assert(RowIdSequences.decode(step7, source).sameElements(step7Ids))
    assert(RowIdSequences.encode(step7Ids).sameElements(step7))

    // update where i >= 10 AND i < 60 AND i % 10 <> 5 (RangeWithBitmap)
    val tens = bytes(10, 15, 26, 13, 8, 10, 16, 60, 26, 7, 223, 127, 255, 253, 247, 223, 3)
    val tensIds = (10L until 60L).filter(_ % 10 != 5).toArray
    assert(RowIdSequences.decode(tens, source).sameElements(tensIds))
    assert(RowIdSequences.encode(tensIds).sameElements(tens))

    // update where i <= 1000 AND i <> 500 on 2000 rows (RangeWithHoles, the hole as an absolute
    // value: u16_array{base 500, offsets [0]})
    val hole = bytes(10, 16, 18, 14, 16, 233, 7, 26, 9, 10, 7, 8, 244, 3, 18, 2, 0, 0)
    val holeIds = (0L to 1000L).filter(_ != 500).toArray
    assert(kinds(hole) == Seq(SegmentCase.RANGE_WITH_HOLES))
    assert(RowIdSequences.decode(hole, source).sameElements(holeIds))
    assert(oneSegment(holeIds).sameElements(hole))
    // our splitter finds two long runs, and two Ranges are a byte smaller than pylance's segment
    assert(kinds(RowIdSequences.encode(holeIds)) == Seq(SegmentCase.RANGE, SegmentCase.RANGE))
    assert(RowIdSequences.encode(holeIds).length == hole.length - 1)
  }

  test("golden: pylance's multi-segment sequences decode (an update batch, a compaction)") {
    // update where i % 1000 = 0 on 100000 rows: one u16 sorted_array per write batch, then a Range
    val sparse = java.util.Base64.getDecoder.decode(
      "ChgiFgoUEhIAAOgD0Ae4C6APiBNwF1gbQB8KGSIXChUIqEYSEAAA6APQB7gLoA+IE3AXWBsKGiIYChYI6IQBEhAAAOgD0Ae4C6AP" +
      "iBNwF1gbChoiGAoWCKjDARIQAADoA9AHuAugD4gTcBdYGwoaIhgKFgjogQISEAAA6APQB7gLoA+IE3AXWBsKHCIaChgIqMACEhIA" +
      "AOgD0Ae4C6APiBNwF1gbQB8KGiIYChYI0IYDEhAAAOgD0Ae4C6APiBNwF1gbChoiGAoWCJDFAxIQAADoA9AHuAugD4gTcBdYGwoa" +
      "IhgKFgjQgwQSEAAA6APQB7gLoA+IE3AXWBsKGiIYChYIkMIEEhAAAOgD0Ae4C6APiBNwF1gbChwiGgoYCNCABRISAADoA9AHuAug" +
      "D4gTcBdYG0AfChoiGAoWCPjGBRIQAADoA9AHuAugD4gTcBdYGwoKCggIuIUGELmFBg==")
    assert(kinds(sparse).count(_ == SegmentCase.SORTED_ARRAY) == 12 && kinds(sparse).last == SegmentCase.RANGE)
    assert(RowIdSequences.decode(sparse, source).sameElements(0L until 100000L by 1000L))
    assert(RowIdSequences.count(sparse) == 100)

    // 40 rows, update i = 5, delete i % 3 = 0, compact: the masked first fragment, then the moved row
    val compacted = bytes(10, 13, 26, 11, 8, 1, 16, 39, 26, 5, 203, 182, 109, 219, 54, 10, 6, 10, 4, 8, 5, 16, 6)
    val expected = (1L until 39L).filter(i => i % 3 != 0 && i != 5) :+ 5L
    assert(kinds(compacted) == Seq(SegmentCase.RANGE_WITH_BITMAP, SegmentCase.RANGE))
    assert(RowIdSequences.decode(compacted, source).sameElements(expected))
    assert(RowIdSequences.lookup(compacted, source).idsAt(Array(0, 5, expected.length - 1)).sameElements(Seq(expected(0), expected(5), expected.last)))
    assert(RowIdSequences.lookup(sparse, source).idsAt(Array(0, 13, 99)).sameElements(Seq(0L, 13000L, 99000L)))
  }

  // ----- splitting into segments -----

  test("no ids is an empty sequence") {
    assert(roundTrip(Array.emptyLongArray).isEmpty)
    assert(RowIdSequences.range(7, 0).isEmpty)
    assert(RowIdSequences.decode(Array.emptyByteArray, source).isEmpty)
  }

  test("a single id is one Range") {
    assert(kinds(roundTrip(Array(99L))) == Seq(SegmentCase.RANGE))
  }

  test("runs of at least 16 consecutive ids become Ranges; the stretches between become one segment each") {
    val ids = ((0L until 100L) ++ Seq(500L, 300L, 200L) ++ (1000L until 1016L)).toArray
    assert(kinds(roundTrip(ids)) == Seq(SegmentCase.RANGE, SegmentCase.ARRAY, SegmentCase.RANGE))

    // 15 consecutive ids are not a run of their own: they stay in the stretch
    val short = (Seq(5L, 3L) ++ (10L until 25L) ++ (100L until 120L)).toArray
    assert(kinds(roundTrip(short)) == Seq(SegmentCase.ARRAY, SegmentCase.RANGE))

    // preserved sparse ids followed by fresh ones: a SortedArray, then the fresh Range
    val preserved = ((0L until 20L).map(_ * 5000) ++ (200000L until 200100L)).toArray
    assert(kinds(roundTrip(preserved)) == Seq(SegmentCase.SORTED_ARRAY, SegmentCase.RANGE))
  }

  test("many short runs with small gaps stay one segment when that is smaller") {
    // runs of 39, each long enough for a Range of its own: 50 Ranges would take about 500 bytes
    val fewHoles = (0L until 2000L).filter(_ % 40 != 39).toArray
    val holes = roundTrip(fewHoles)
    assert(kinds(holes) == Seq(SegmentCase.RANGE_WITH_HOLES))
    assert(holes.length < 150)
    // runs of 19: 100 Ranges, or one bitmap of 250 bytes
    val moreHoles = (0L until 2000L).filter(_ % 20 != 19).toArray
    val bitmap = roundTrip(moreHoles)
    assert(kinds(bitmap) == Seq(SegmentCase.RANGE_WITH_BITMAP))
    assert(bitmap.length < 300)
  }

  test("thousands of random sequences of mixed pieces round trip, are never larger than one segment, and answer ids at offsets") {
    val rnd = new Random(424242)
    for (_ <- 0 until 3000) {
      var cursor = rnd.nextInt(1 << 30).toLong
      val pieces = Seq.fill(1 + rnd.nextInt(5)) {
        val n = rnd.nextInt(200)
        val piece: Seq[Long] = rnd.nextInt(5) match {
          case 0 => cursor until cursor + n
          case 1 => (cursor until cursor + 2 * n).filter(_ => rnd.nextInt(30) != 0)
          case 2 => (cursor until cursor + 2 * n).filter(_ => rnd.nextBoolean())
          case 3 => (0 until n).map(i => cursor + i.toLong * (1 + rnd.nextInt(3) + rnd.nextInt(100000)))
            .distinct.sorted
          case _ => rnd.shuffle((cursor until cursor + n).toVector)
        }
        cursor += 2L * n * 100100 + 1
        piece
      }
      val ids = rnd.shuffle(pieces).flatten.toArray
      val encoded = roundTrip(ids)
      assert(encoded.length <= oneSegment(ids).length || ids.isEmpty)

      // fresh ids appended at commit, right after the last id or elsewhere
      val start = if (rnd.nextBoolean() && ids.nonEmpty) ids.last + 1 else cursor + rnd.nextInt(10)
      val count = rnd.nextInt(50)
      val appended = RowIdSequences.appendRange(encoded, start, count)
      val all = ids ++ (start until start + count)
      assert(RowIdSequences.decode(appended, source).sameElements(all))
      // the ids at some offsets, looked up without decoding every segment
      val offsets = all.indices.filter(_ => rnd.nextInt(7) == 0).toArray
      assert(RowIdSequences.lookup(appended, source).idsAt(offsets).sameElements(offsets.map(all(_))))
    }
  }

  // ----- appending fresh ids -----

  test("appendRange extends a trailing Range that ends where the new ids start") {
    assert(RowIdSequences.appendRange(RowIdSequences.range(0, 10), 10, 5).sameElements(RowIdSequences.range(0, 15)))
    assert(RowIdSequences.appendRange(Array.emptyByteArray, 5, 3).sameElements(RowIdSequences.range(5, 3)))
    assert(RowIdSequences.range(5, 3).sameElements(RowIdSequences.encode(Array(5L, 6L, 7L))))

    val ids = ((0L until 50L by 5) ++ (100L until 200L)).toArray
    val encoded = RowIdSequences.encode(ids)
    assert(kinds(encoded) == Seq(SegmentCase.RANGE_WITH_BITMAP, SegmentCase.RANGE))
    val extended = RowIdSequences.appendRange(encoded, 200, 10)
    assert(kinds(extended) == Seq(SegmentCase.RANGE_WITH_BITMAP, SegmentCase.RANGE))
    assert(RowIdSequences.decode(extended, source).sameElements(ids ++ (200L until 210L)))
    val firstSegmentEntry = encoded.length - RowIdSequences.range(100, 100).length
    assert(extended.take(firstSegmentEntry).sameElements(encoded.take(firstSegmentEntry)))
  }

  test("appendRange keeps every existing byte when it cannot merge") {
    val encoded = RowIdSequences.encode((0L until 100L by 7).toArray)
    val appended = RowIdSequences.appendRange(encoded, 1000, 50)
    assert(appended.take(encoded.length).sameElements(encoded))
    assert(kinds(appended) == Seq(SegmentCase.RANGE_WITH_BITMAP, SegmentCase.RANGE))
    assert(RowIdSequences.decode(appended, source).sameElements((0L until 100L by 7) ++ (1000L until 1050L)))

    val gap = RowIdSequences.appendRange(RowIdSequences.range(0, 10), 20, 5)
    assert(kinds(gap) == Seq(SegmentCase.RANGE, SegmentCase.RANGE))
    assert(RowIdSequences.appendRange(gap, 25, 0).sameElements(gap))
    intercept[IllegalArgumentException](RowIdSequences.appendRange(gap, 25, -1))
  }

  // ----- damaged bytes -----

  test("bytes that are not a RowIdSequence are corrupt, with typed errors") {
    val truncated = bytes(0x0a, 0x05, 0x0a, 0x02)
    for (call <- Seq[Array[Byte] => Any](RowIdSequences.decode(_, source), RowIdSequences.count(_, source),
        RowIdSequences.appendRange(_, 0, 1, source))) {
      val e = intercept[CorruptFileException](call(truncated))
      assert(e.getMessage.contains(source), e.getMessage)
    }
    // a segment whose range ends before it starts: {1: {1: {1: 9, 2: 3}}}
    intercept[CorruptFileException](RowIdSequences.decode(bytes(0x0a, 0x06, 0x0a, 0x04, 0x08, 9, 0x10, 3), source))
  }

  test("an unknown field of the sequence or its segments is unsupported") {
    val withField2 = RowIdSequences.range(0, 10) ++ bytes(0x10, 0x01)
    intercept[UnsupportedFeatureException](RowIdSequences.decode(withField2, source))
    intercept[UnsupportedFeatureException](RowIdSequences.appendRange(withField2, 10, 1))
    val newSegmentKind = bytes(0x0a, 0x02, 0x32, 0x00)
    intercept[UnsupportedFeatureException](RowIdSequences.decode(newSegmentKind, source))
    intercept[UnsupportedFeatureException](RowIdSequences.count(newSegmentKind))
  }

  test("a sequence with more ids than a fragment can address is corrupt") {
    val huge = RowIdSequences.appendRange(RowIdSequences.range(0, 1L << 32), (1L << 32) + 5, 1)
    intercept[CorruptFileException](RowIdSequences.count(huge))
    assert(RowIdSequences.count(RowIdSequences.range(0, 1L << 32)) == (1L << 32))
    intercept[CorruptFileException](RowIdSequences.decode(RowIdSequences.range(0, 1L << 31), source))
  }
}
