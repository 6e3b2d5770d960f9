package sparklance.spark

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.spark.rowlevel.LongKeySet

class LongKeySetSuite extends AnyFunSuite {

  test("holds exactly its keys: zero, extremes, duplicates, and keys that share slots") {
    val random = new Random(17)
    for (n <- Seq(0, 1, 2, 3, 7, 64, 1000, 50000)) {
      // Multiples of a large power of two land in few slots of a small table; duplicates repeat keys.
      val keys = Array.fill(n)(random.nextInt(6) match {
        case 0 => random.nextLong()
        case 1 => random.nextInt(100).toLong << 40
        case 2 => random.nextInt(50).toLong - 25
        case 3 => Long.MinValue + random.nextInt(3)
        case 4 => Long.MaxValue - random.nextInt(3)
        case _ => random.nextInt(n + 1).toLong
      })
      val set = LongKeySet.of(n, keys(_))
      val expected = keys.toSet
      assert(set.size == expected.size)
      keys.foreach(k => assert(set.contains(k), s"$k of $n"))
      val probes = Seq(0L, 1L, -1L, Long.MinValue, Long.MaxValue, 1L << 40) ++ Seq.fill(5000)(random.nextLong()) ++
        Seq.fill(5000)(random.nextInt(2 * n + 50).toLong - 25)
      probes.foreach(p => assert(set.contains(p) == expected(p), s"$p of $n"))
    }
  }
}
