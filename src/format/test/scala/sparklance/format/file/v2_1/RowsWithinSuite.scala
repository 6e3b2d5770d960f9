package sparklance.format.file.v2_1

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.proto.Encodings21Protos.RepDefLayer

/** How many rows of a page fit a batch's bytes: the same answer as the walk row by row, for every kind of slots and levels. */
class RowsWithinSuite extends AnyFunSuite {
  private val rnd = new Random(37)
  private val ctx = Ctx("test", "page")

  /** The reference: rows taken one by one while their bytes fit. */
  private def walk(p: PageData, from: Int, until: Int, maxBytes: Long, atLeastOne: Boolean): (Int, Long) = {
    var used = 0L
    var r = from
    var more = true
    while (more && r < until) {
      val bytes = p.slotBytes(p.slotOfRow(r), p.slotOfRow(r + 1))
      if (used + bytes > maxBytes && (r > from || !atLeastOne)) more = false
      else { used += bytes; r += 1 }
    }
    (r - from, used)
  }

  private def fixed(bits: Int, n: Int) = Slots.Fixed(bits, new Array[Byte]((n * bits + 7) / 8), n)

  private def variable(n: Int) = Slots.Variable(Array.iterate(0L, n + 1)(_ + rnd.nextInt(50)), Array.emptyByteArray, n)

  private def slots(n: Int): Slots = rnd.nextInt(7) match {
    case 0 => fixed(Seq(8, 16, 32, 64, 128)(rnd.nextInt(5)), n)
    case 1 => fixed(1, n)
    case 2 => variable(n)
    case 3 => Slots.Indexed(variable(5), Array.fill(n)(rnd.nextInt(5)), n)
    case 4 => Slots.FixedSizeList(1 + rnd.nextInt(9), null, fixed(32, 0), n)
    case 5 => Slots.FixedSizeList(1 + rnd.nextInt(9), null, fixed(1, 0), n)
    case _ => Slots.Empty(n)
  }

  /** A page of `rows` rows: plain, with nullable items, or lists (null, empty, or of nullable items). */
  private def page(rows: Int): PageData = rnd.nextInt(3) match {
    case 0 => new PageData(rows, null, null, rows, slots(rows), new Layers(IndexedSeq(RepDefLayer.REPDEF_ALL_VALID_ITEM), ctx), ctx)
    case 1 =>
      val defs = Array.fill(rows)(rnd.nextInt(2))
      new PageData(rows, null, defs, rows, slots(rows), new Layers(IndexedSeq(RepDefLayer.REPDEF_NULLABLE_ITEM), ctx), ctx)
    case _ =>
      val (rep, defs) = (Array.newBuilder[Int], Array.newBuilder[Int])
      var items = 0
      (0 until rows).foreach { _ =>
        rnd.nextInt(4) match {
          case 0 => rep += 1; defs += 2 // a null list
          case 1 => rep += 1; defs += 3 // an empty list
          case _ => (0 until 1 + rnd.nextInt(4)).foreach { k => rep += (if (k == 0) 1 else 0); defs += rnd.nextInt(2); items += 1 }
        }
      }
      val (r, d) = (rep.result(), defs.result())
      new PageData(rows, r, d, r.length, slots(items),
        new Layers(IndexedSeq(RepDefLayer.REPDEF_NULLABLE_ITEM, RepDefLayer.REPDEF_NULL_AND_EMPTY_LIST), ctx), ctx)
  }

  test("rows within a budget are those the walk row by row takes, and their bytes") {
    for (_ <- 0 until 3000) {
      val rows = 1 + rnd.nextInt(300)
      val p = page(rows)
      val from = rnd.nextInt(rows)
      val until = from + rnd.nextInt(rows - from + 1)
      val whole = p.slotBytes(p.slotOfRow(from), p.slotOfRow(until))
      val maxBytes = rnd.nextInt(4) match {
        case 0 => whole
        case 1 => whole + rnd.nextInt(10)
        case 2 => math.max(0L, whole - rnd.nextInt(10))
        case _ => rnd.nextLong(whole + 2)
      }
      val atLeastOne = rnd.nextBoolean()
      assert(p.rowsWithin(from, until, maxBytes, atLeastOne) == walk(p, from, until, maxBytes, atLeastOne),
        s"rows $from-$until of ${p.slots}, $maxBytes bytes")
    }
  }
}
