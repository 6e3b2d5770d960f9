package sparklance.format.file.v2_0

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** An end offset without its null adjustment is `v % adj`, whatever shortcut computes it. */
class UnadjustedOffsetsSuite extends AnyFunSuite {
  test("unadjusted(v, adj) == v % adj for random and edge values") {
    val rnd = new Random(37)
    def check(v: Long, adj: Long): Unit = {
      assert(v >= 0 && adj > 0, s"the test made v $v adj $adj")
      assert(PageDecoder.unadjusted(v, adj) == v % adj, s"v $v adj $adj")
    }
    for (_ <- 0 until 200000) {
      val adj = rnd.nextInt(4) match {
        case 0 => 1L + rnd.nextInt(100)
        case 1 => 1L + rnd.nextInt(Int.MaxValue)
        case 2 => 1L + rnd.nextLong(Long.MaxValue - 1)
        case _ => Long.MaxValue - rnd.nextInt(3)
      }
      val v = rnd.nextInt(5) match {
        case 0 => rnd.nextLong(adj)
        case 1 => adj + rnd.nextLong(math.min(adj, Long.MaxValue - adj + 1)) // a null's end, as Lance writes it
        case 2 => if (adj <= Long.MaxValue / 3) 2 * adj + rnd.nextLong(adj) else rnd.nextLong(Long.MaxValue)
        case 3 => rnd.nextLong(Long.MaxValue)
        case _ => Seq(0L, adj - 1, adj, if (adj <= Long.MaxValue / 2) 2 * adj - 1 else Long.MaxValue, if (adj <= Long.MaxValue / 2) 2 * adj else adj, Long.MaxValue)(rnd.nextInt(6))
      }
      check(v, adj)
    }
  }
}
