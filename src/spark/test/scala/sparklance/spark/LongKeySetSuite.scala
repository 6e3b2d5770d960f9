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

  test("retain keeps the rows whose values are keys, merging ascending values with the sorted keys") {
    val random = new Random(31)
    for (round <- 0 until 400) {
      val n = Seq(0, 1, 3, 50, 2000)(round % 5)
      val keys = Array.fill(n)(random.nextInt(4) match {
        case 0 => random.nextLong()
        case 1 => Long.MinValue + random.nextInt(3)
        case 2 => Long.MaxValue - random.nextInt(3)
        case _ => random.nextInt(3 * n + 10).toLong - 5
      })
      // Keys given in order (with repeats) are kept in that order; others are sorted for retain.
      if (round % 2 == 0) java.util.Arrays.sort(keys)
      val set = LongKeySet.of(n, keys(_))
      // Ascending runs (with repeats, long jumps and the extremes) that may turn down once or often.
      val count = random.nextInt(3000)
      var value = Long.MinValue + random.nextInt(2)
      val values = Array.fill(count) {
        value = random.nextInt(10) match {
          case 0 if random.nextInt(20) == 0 => random.nextLong()
          case 0 => value
          case 1 => if (value > Long.MaxValue - (1L << 50)) Long.MaxValue else value + random.nextLong(1L << 50)
          case 2 if n > 0 => keys(random.nextInt(n))
          case _ => if (value == Long.MaxValue) value else value + 1 + random.nextInt(3)
        }
        value
      }
      val rows = Array.tabulate(count)(j => 7 * j + 1)
      val expected = rows.indices.filter(j => set.contains(values(j))).map(rows(_))
      val kept = set.retain(values, rows, count)
      assert(rows.take(kept).toSeq == expected, s"round $round")
    }
  }
}
