package sparklance.format.skipping

import java.nio.charset.StandardCharsets.UTF_8
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.skipping.ColumnFilter._
import sparklance.format.skipping.ColumnFilter.CompareOp._

/**
 * ZoneTest against a brute-force oracle: random zones of doubles (with NaN, -0.0, infinities and
 * nulls), longs and strings, summarized the way pylance summarizes them, and random filters
 * evaluated on every value with Spark's semantics. A zone holding a matching value must be kept;
 * the test also checks that zones are pruned at all.
 */
class ZoneTestSuite extends AnyFunSuite {

  /** Spark's order, written independently of ZoneValue: NaN largest, -0.0 = 0.0, strings as unsigned bytes. */
  private def order(a: ZoneValue, b: ZoneValue): Int = (a, b) match {
    case (ZoneValue.Floating(x), ZoneValue.Floating(y)) =>
      if (x.isNaN && y.isNaN) 0 else if (x.isNaN) 1 else if (y.isNaN) -1 else java.lang.Double.compare(x + 0.0, y + 0.0)
    case (ZoneValue.Integral(x), ZoneValue.Integral(y)) => x.compare(y)
    case (ZoneValue.Bytes(x), ZoneValue.Bytes(y)) =>
      x.zip(y).map { case (p, q) => (p & 0xff) - (q & 0xff) }.find(_ != 0).getOrElse(x.length - y.length)
    case _ => fail(s"$a vs $b")
  }

  /** The filter on one value in SQL's three-valued logic: None is unknown. */
  private def eval(filter: ColumnFilter, value: Option[ZoneValue]): Option[Boolean] = filter match {
    case IsNull(_) => Some(value.isEmpty)
    case IsNotNull(_) => Some(value.isDefined)
    case Not(c) => eval(c, value).map(!_)
    case Compare(_, op, v) => value.map { x =>
      val c = order(x, v)
      op match { case Equal => c == 0 case Less => c < 0 case LessOrEqual => c <= 0 case Greater => c > 0 case GreaterOrEqual => c >= 0 }
    }
    case NotEqual(_, v) => value.map(order(_, v) != 0)
    case In(_, vs) => value.map(x => vs.exists(order(x, _) == 0))
    case StartsWith(_, p) => value.map { case ZoneValue.Bytes(b) => b.startsWith(p) case other => fail(s"$other") }
    case other => fail(s"$other")
  }

  /** The zone pylance would write for `values` (None = null), spanning `deleted` more rows. */
  private def zoneOf(values: Seq[Option[ZoneValue]], deleted: Int): Zone = {
    val present = values.flatten
    val nans = present.count(ZoneValue.isNaN)
    val comparable = present.filterNot(ZoneValue.isNaN)
    val min = comparable.sortWith(order(_, _) < 0).headOption
    val max = if (nans > 0) present.find(ZoneValue.isNaN) else comparable.sortWith(order(_, _) > 0).headOption
    Zone(0, 0, values.size + deleted, min, max, values.count(_.isEmpty), nans)
  }

  private val doubles = Seq(Double.NaN, -0.0, 0.0, Double.PositiveInfinity, Double.NegativeInfinity, 1.5, -2.0, 3.0, 7.25)
  private val strings = Seq("", "a", "ab", "abc", "b", "\u00e9t\u00e9", "z", "zz\uD83D\uDE00", "A")

  private def randomValue(kind: Int, rnd: Random): ZoneValue = kind match {
    case 0 => ZoneValue.Floating(if (rnd.nextBoolean()) doubles(rnd.nextInt(doubles.size)) else rnd.nextInt(9) - 4.0)
    case 1 => ZoneValue.Integral(rnd.nextInt(7) match {
      case 0 => Long.MinValue case 1 => Long.MaxValue case _ => rnd.nextInt(21) - 10L
    })
    case _ => ZoneValue.Bytes(strings(rnd.nextInt(strings.size)).getBytes(UTF_8))
  }

  private def randomLeaf(kind: Int, rnd: Random): ColumnFilter = {
    val v = randomValue(kind, rnd)
    rnd.nextInt(9) match {
      case 0 => IsNull(0)
      case 1 => IsNotNull(0)
      case 2 => In(0, Seq.fill(1 + rnd.nextInt(12))(randomValue(kind, rnd)))
      case 3 => NotEqual(0, v)
      case 4 if kind == 2 => StartsWith(0, strings(rnd.nextInt(strings.size)).getBytes(UTF_8).take(rnd.nextInt(3)))
      case _ => Compare(0, Seq(Equal, Less, LessOrEqual, Greater, GreaterOrEqual)(rnd.nextInt(5)), v)
    }
  }

  test("a zone holding a matching value is never skipped, and zones are skipped") {
    val rnd = new Random(23)
    var skipped = 0
    for (_ <- 0 until 60000) {
      val kind = rnd.nextInt(3)
      val values = Seq.fill(1 + rnd.nextInt(4))(if (rnd.nextInt(5) == 0) None else Some(randomValue(kind, rnd)))
      val zone = zoneOf(values, deleted = if (rnd.nextInt(4) == 0) 1 else 0)
      val leaf = randomLeaf(kind, rnd)
      val filter = if (rnd.nextInt(3) == 0) Not(leaf) else leaf
      val matches = values.exists(v => eval(filter, v).contains(true))
      val kept = ZoneTest.mightMatch(zone, ColumnFilter.negationFree(filter))
      assert(kept || !matches, s"$filter skipped $zone, which holds ${values.mkString(", ")}")
      if (!kept) skipped += 1
    }
    assert(skipped > 10000, skipped)
  }

  test("IN searches its values in order: the same answers as comparing with each") {
    val rnd = new Random(29)
    for (_ <- 0 until 20000) {
      val kind = rnd.nextInt(3)
      val in = In(0, Seq.fill(rnd.nextInt(40))(randomValue(kind, rnd)))
      val v = randomValue(kind, rnd)
      assert(ColumnFilter.keeps(in, Some(v)) == in.values.exists(order(v, _) == 0), s"$v in $in")
      val Seq(lo, hi) = Seq(v, randomValue(kind, rnd)).sortWith(order(_, _) < 0)
      assert(in.anyWithin(lo, hi) == in.values.exists(x => order(lo, x) <= 0 && order(x, hi) <= 0), s"[$lo, $hi] and $in")
    }
  }

  test("-0.0 and 0.0 are one value; NaN is above infinity and equals itself") {
    def zone(min: Double, max: Double, nans: Long = 0) =
      Zone(0, 0, 4, Some(ZoneValue.Floating(min)), Some(ZoneValue.Floating(max)), 0, nans)
    assert(ZoneTest.mightMatch(zone(0.0, 2.0), Compare(0, Equal, ZoneValue.Floating(-0.0))))
    assert(ZoneTest.mightMatch(zone(-3.0, -0.0), Compare(0, Equal, ZoneValue.Floating(0.0))))
    assert(!ZoneTest.mightMatch(zone(-0.0, 0.0), NotEqual(0, ZoneValue.Floating(0.0))))
    assert(ZoneTest.mightMatch(zone(1.0, Double.NaN, nans = 1), Compare(0, Greater, ZoneValue.Floating(Double.PositiveInfinity))))
    assert(!ZoneTest.mightMatch(zone(1.0, 5.0), Compare(0, Equal, ZoneValue.Floating(Double.NaN))))
    val nanOnly = Zone(0, 0, 4, None, Some(ZoneValue.Floating(Double.NaN)), 2, 2)
    assert(ZoneTest.mightMatch(nanOnly, Compare(0, Equal, ZoneValue.Floating(Double.NaN))))
    assert(!ZoneTest.mightMatch(nanOnly, Compare(0, Less, ZoneValue.Floating(Double.PositiveInfinity))))
    val nullOnly = Zone(0, 0, 4, None, None, 4, 0)
    assert(!ZoneTest.mightMatch(nullOnly, Compare(0, Equal, ZoneValue.Floating(1.0))) && ZoneTest.mightMatch(nullOnly, IsNull(0)))
    assert(!ZoneTest.mightMatch(nullOnly, IsNotNull(0)))
  }
}
