package sparklance.format.file.v2_1

import org.apache.arrow.memory.RootAllocator
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * A column reader reuses its read-ahead arrays from read to read: randomized reads of consecutive
 * row ranges (of random sizes and byte budgets, columns interleaved, read-ahead sizes from a few
 * bytes, where one read refills the arrays many times, to more than a page) must give the values
 * written, as a reader without reuse (reading rows sparsely: a fresh array per read) does.
 */
class ReadAheadReuseSuite extends AnyFunSuite {
  import Writer21Fixtures._

  for (minor <- Seq(1, 2); (schemaName, schema, long) <- Seq(("flat", flatSchema, false), ("long", longSchema, true), ("nested", nestedSchema, false)))
    test(s"2.$minor $schemaName columns: consecutive reads with reused read-ahead arrays give the values written") {
      val rnd = new Random(37L * minor + schemaName.hashCode)
      val a = new RootAllocator()
      try {
        for (round <- 0 until 3) {
          val sizes = Seq.fill(1 + rnd.nextInt(3))(rnd.nextInt(if (long) 400 else 3000))
          val bs = batches(schema, sizes, rnd.nextLong(), 0.2, a, long = long, small = rnd.nextBoolean())
          val expected = schema.fields.indices.map(fi => bs.flatMap(b => (0 until b(fi).getValueCount).map(Canon(b(fi), _))))
          val (bytes, _) = try write(schema, bs, minor, maxPageBytes = Seq(2000L, 50000L, 8L << 20)(rnd.nextInt(3))) finally bs.flatten.foreach(_.close())
          val n = sizes.sum
          val columnOf = schema.fields.flatMap(FileWriter21.leaves).map(_.id).zipWithIndex.toMap
          val readAhead = Seq(1, 100, 1000, 5000, 1 << 20)(rnd.nextInt(5))
          val reader = new FileReader21(new MemFile(bytes, s"mem-2.$minor", readAhead))
          try {
            // Every field read from start to end in ranges, the fields taking turns, so that each
            // column's arrays are reused while the other columns read theirs.
            val next = Array.fill(schema.fields.size)(0)
            while (next.exists(_ < n)) {
              val fi = rnd.nextInt(schema.fields.size)
              if (next(fi) < n) {
                val f = schema.fields(fi)
                val len = math.min(n - next(fi), 1 + rnd.nextInt(700))
                val maxBytes = if (rnd.nextBoolean()) Long.MaxValue else 1L + rnd.nextInt(20000)
                val v = reader.read(f, columnOf, next(fi), len, a, maxBytes)
                try {
                  val got = v.getValueCount
                  assert(got >= 1 && got <= len)
                  val bad = (0 until got).find(i => Canon(v, i) != expected(fi)(next(fi) + i))
                  assert(bad.isEmpty, s"2.$minor ${f.name} row ${bad.map(_ + next(fi))} (read ahead $readAhead, rows ${next(fi)}+$len, " +
                    s"$maxBytes bytes): got ${bad.map(Canon(v, _))}, want ${bad.map(i => expected(fi)(next(fi) + i))}")
                  next(fi) += got
                } finally v.close()
              }
            }
          } finally reader.close()
        }
        assert(a.getAllocatedMemory == 0, "vectors leaked")
      } finally a.close()
    }
}
