package sparklance.format.rowids

import scala.collection.mutable
import scala.util.Random
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.CorruptFileException
import sparklance.format.rowids.RowIdIndex.FragmentIds

class RowIdIndexSuite extends AnyFunSuite {
  private def address(fragment: Long, offset: Long): Long = (fragment << 32) | offset

  private def fragment(id: Long, rowIds: Seq[Long], deleted: Int*): FragmentIds =
    FragmentIds(id, rowIds.toArray, RoaringBitmap.bitmapOf(deleted: _*))

  test("a fragment of fresh ids is one run") {
    val index = RowIdIndex.build(Seq(fragment(3, 100L until 1100L)))
    assert(index.runCount == 1 && index.size == 1000)
    assert(index.address(100) == address(3, 0))
    assert(index.address(1099) == address(3, 999))
    assert(index.address(99) == -1 && index.address(1100) == -1)
    assert(index.contains(500) && !index.contains(5000))
  }

  test("deleted rows are absent and cut runs; ids adjacent across fragments stay separate runs") {
    val index = RowIdIndex.build(Seq(fragment(0, 0L until 10L, 4, 5), fragment(1, 10L until 20L)))
    assert(index.runCount == 3 && index.size == 18)
    assert(!index.contains(4) && !index.contains(5))
    assert(index.address(6) == address(0, 6) && index.address(10) == address(1, 0))
  }

  test("updated rows: the old copies are deleted, the ids live on in a new fragment") {
    val index = RowIdIndex.build(Seq(
      fragment(0, 0L until 100L, 7, 14, 21),
      fragment(5, Seq(21L, 7L, 14L))))
    assert(index.size == 100)
    assert(index.address(7) == address(5, 1) && index.address(14) == address(5, 2) && index.address(21) == address(5, 0))
    assert(index.address(8) == address(0, 8))
  }

  test("no fragments, or only deleted rows, is an empty index") {
    assert(RowIdIndex.build(Nil).size == 0 && RowIdIndex.build(Nil).address(0) == -1)
    val allDeleted = RowIdIndex.build(Seq(fragment(0, 0L until 3L, 0, 1, 2)))
    assert(allDeleted.size == 0 && allDeleted.runCount == 0 && !allDeleted.contains(1))
  }

  test("deleted offsets past the last row delete nothing") {
    val index = RowIdIndex.build(Seq(fragment(0, 0L until 3L, 1, 3, 1000)))
    assert(index.size == 2 && index.contains(0) && !index.contains(1) && index.contains(2))
  }

  test("fragment ids up to 2^32 - 1 address rows, even where the address is a negative Long") {
    val top = 0xfffffff0L
    val index = RowIdIndex.build(Seq(fragment(top, 0L until 5L)))
    assert(index.address(4) == address(top, 4) && index.address(4) < 0 && index.contains(4))
    val e = intercept[CorruptFileException](RowIdIndex.build(Seq(fragment(1L << 32, 0L until 5L)), "t.lance v3"))
    assert(e.getMessage.contains("t.lance v3") && e.getMessage.contains(s"${1L << 32}"), e.getMessage)
    intercept[CorruptFileException](RowIdIndex.build(Seq(fragment(-1, 0L until 5L))))
  }

  test("two live rows with one row id are corrupt; a deleted duplicate is not") {
    val e = intercept[CorruptFileException](RowIdIndex.build(Seq(
      fragment(0, 0L until 10L), fragment(1, Seq(100L, 5L))), "t.lance version 4"))
    assert(e.getMessage.contains("t.lance version 4") && e.getMessage.contains("row id 5"), e.getMessage)
    assert(e.getMessage.contains("fragment 0 offset 5") && e.getMessage.contains("fragment 1 offset 1"), e.getMessage)
    intercept[CorruptFileException](RowIdIndex.build(Seq(fragment(0, Seq(3L, 4L, 3L)))))
    assert(RowIdIndex.build(Seq(fragment(0, 0L until 10L, 5), fragment(1, Seq(100L, 5L)))).size == 11)
  }

  test("random tables of appends, updates and deletes agree with a brute-force map") {
    val rnd = new Random(9001)
    for (_ <- 0 until 300) {
      // what a table with stable row ids goes through: appends of fresh ids, updates that delete a
      // row in place and rewrite it with the same id elsewhere, plain deletes
      val rowIds = mutable.ArrayBuffer.empty[Array[Long]]
      val deleted = mutable.ArrayBuffer.empty[RoaringBitmap]
      val fragmentIds = rnd.shuffle((0L until 20L) ++ Seq(0x7fffffffL, 0x80000000L, 0xffffffffL)).toIndexedSeq
      var nextRowId = rnd.nextInt(1000).toLong
      def live: IndexedSeq[(Int, Int)] =
        for (f <- rowIds.indices; o <- rowIds(f).indices if !deleted(f).contains(o)) yield (f, o)
      for (_ <- 0 until 1 + rnd.nextInt(8) if rowIds.size < fragmentIds.size) {
        rnd.nextInt(3) match {
          case 0 | 1 if rowIds.isEmpty || rnd.nextBoolean() =>
            val n = rnd.nextInt(300)
            rowIds += Array.tabulate(n)(i => nextRowId + i); deleted += new RoaringBitmap()
            nextRowId += n + rnd.nextInt(3) // a failed commit can burn ids
          case 0 | 1 =>
            val rows = live
            val updated = rnd.shuffle(rows).take(rnd.nextInt(rows.size + 1))
            val moved = updated.map { case (f, o) => deleted(f).add(o); rowIds(f)(o) }
            rowIds += (if (rnd.nextBoolean()) moved.sorted else moved).toArray; deleted += new RoaringBitmap()
          case _ =>
            live.foreach { case (f, o) => if (rnd.nextInt(5) == 0) deleted(f).add(o) }
        }
      }
      val fragments = rowIds.indices.map(f => FragmentIds(fragmentIds(f), rowIds(f), deleted(f)))
      val expected = live.map { case (f, o) => rowIds(f)(o) -> address(fragmentIds(f), o) }.toMap
      assert(expected.size == live.size, "the simulation itself made a duplicate")

      val index = RowIdIndex.build(rnd.shuffle(fragments))
      assert(index.size == expected.size)
      for (id <- -1L to nextRowId + 2)
        assert(index.address(id) == expected.getOrElse(id, -1L), s"row id $id")
      assert(index.runCount <= expected.size)
    }
  }

  test("a large fragment with scattered deletions stays compact and fast to build") {
    val n = 2_000_000
    val deleted = new RoaringBitmap()
    (0 until n by 1000).foreach(deleted.add)
    val index = RowIdIndex.build(Seq(FragmentIds(1, Array.tabulate(n)(_.toLong + 10), deleted)))
    assert(index.runCount == n / 1000)
    assert(index.size == n - n / 1000)
    assert(index.address(10 + 1001) == address(1, 1001) && !index.contains(10 + 1000))
  }
}
