package sparklance.format.file

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.file.v2_1.{Canon, Writer21Fixtures}

/**
 * Scattered rows read over ranges hold the values of the rows asked for, across ranges far apart
 * and for every kind of vector (a large list inside a list among them, which Arrow's own copy
 * refuses); within a byte budget they are the first of those rows.
 */
class RangeReadsSuite extends AnyFunSuite {
  import Writer21Fixtures._

  /** Rows `[start, start + n)` of `v`, or the first of them within `maxBytes` (one at least), as a reader reads them. */
  private def range(v: FieldVector, a: RootAllocator)(start: Long, n: Int, maxBytes: Long): FieldVector = {
    var k = 1
    while (k < n && RowBytes(v, start.toInt, start.toInt + k + 1) <= maxBytes) k += 1
    RowSelection.copy(v, Array.range(start.toInt, start.toInt + k), k, a)
  }

  for ((name, schema) <- Seq(("flat", flatSchema), ("nested", nestedSchema)))
    test(s"$name vectors: rows far apart and close together, with and without a budget") {
      val a = new RootAllocator()
      try {
        val rnd = new Random(name.hashCode)
        val n = 20000
        val vectors = batches(schema, Seq(n), 11L, 0.2, a).head
        try for (round <- 0 until 3) {
          // Runs and single rows, with gaps of up to twice a range's span between them.
          val rows = {
            val b = Array.newBuilder[Long]
            var at = rnd.nextInt(100)
            while (at < n) { (at until math.min(n, at + rnd.nextInt(50))).foreach(b += _); at += 1 + rnd.nextInt(2 * RangeReads.MaxSpan) }
            b.result()
          }
          for (v <- vectors if rows.nonEmpty) {
            val what = s"${v.getField.getName}, round $round, ${rows.length} rows"
            val all = RangeReads.rows(rows, a)(range(v, a))
            try assert((0 until all.getValueCount).map(Canon(all, _)) == rows.toSeq.map(r => Canon(v, r.toInt)), what)
            finally all.close()
            val budget = 1 + rnd.nextInt(4096)
            val some = RangeReads.rows(rows, a, budget)(range(v, a))
            try {
              assert(some.getValueCount >= 1 && some.getValueCount <= rows.length, what)
              assert((0 until some.getValueCount).map(Canon(some, _)) == rows.take(some.getValueCount).toSeq.map(r => Canon(v, r.toInt)), what)
            } finally some.close()
          }
        } finally vectors.foreach(_.close())
      } finally a.close()
    }
}
