package sparklance.format.skipping

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.skipping.ColumnFilter._

class ColumnFilterSuite extends AnyFunSuite {
  private def v(n: Long) = ZoneValue.Integral(n)

  /** Whether a row (field id -> value, None for null) passes a negation-free filter, as SQL keeps rows. */
  private def passes(filter: ColumnFilter, row: Map[Int, Option[ZoneValue]]): Boolean = filter match {
    case And(l, r) => passes(l, row) && passes(r, row)
    case Or(l, r) => passes(l, row) || passes(r, row)
    case Keep => true
    case leaf => keeps(leaf, row(fieldId(leaf).get))
  }

  private def randomFilter(random: Random, depth: Int): ColumnFilter = {
    val field = random.nextInt(2)
    random.nextInt(if (depth == 0) 5 else 7) match {
      case 0 => Compare(field, CompareOp.Equal, v(random.nextInt(4)))
      case 1 => IsNotNull(field)
      case 2 => IsNull(field)
      case 3 => In(field, Seq(v(random.nextInt(4)), v(random.nextInt(4))))
      case 4 => NotEqual(field, v(random.nextInt(4)))
      case 5 => And(randomFilter(random, depth - 1), randomFilter(random, depth - 1))
      case _ => Or(randomFilter(random, depth - 1), randomFilter(random, depth - 1))
    }
  }

  test("an IS NOT NULL that a comparison in the same AND implies is left out") {
    assert(withoutImpliedNotNull(And(IsNotNull(1), Compare(1, CompareOp.Equal, v(3)))) == Compare(1, CompareOp.Equal, v(3)))
    assert(withoutImpliedNotNull(And(And(IsNotNull(1), IsNotNull(2)), In(1, Seq(v(3))))) == And(IsNotNull(2), In(1, Seq(v(3)))))
    // Alone, or beside a test of another column or another branch of an OR, it stays.
    assert(withoutImpliedNotNull(IsNotNull(1)) == IsNotNull(1))
    assert(withoutImpliedNotNull(Or(IsNotNull(1), Compare(1, CompareOp.Equal, v(3)))) == Or(IsNotNull(1), Compare(1, CompareOp.Equal, v(3))))
  }

  test("leaving out implied IS NOT NULL tests keeps exactly the rows the filter keeps") {
    val random = new Random(17)
    val values = None +: (0 until 4).map(n => Some(v(n)))
    val rows = for (a <- values; b <- values) yield Map(0 -> a, 1 -> b)
    (1 to 2000).foreach { _ =>
      val filter = randomFilter(random, 3)
      val simpler = withoutImpliedNotNull(filter)
      rows.foreach(row => assert(passes(simpler, row) == passes(filter, row), s"$filter vs $simpler on $row"))
    }
  }
}
