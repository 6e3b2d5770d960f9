package sparklance.format.file.v2_1

import org.scalatest.funsuite.AnyFunSuite

/** FastLanes blocks packed by the writer unpack to the same values, whole and one by one, at every width of every value size. */
class FastLanesSuite extends AnyFunSuite {
  private val random = new scala.util.Random(17)

  for (t <- Seq(8, 16, 32, 64); n <- Seq(1024, 1000, 1)) test(s"$t-bit values, blocks of $n, every packed width") {
    val bytes = t / 8
    for (w <- 0 to t) {
      val mask = if (w == 64) -1L else (1L << w) - 1
      val values = Array.fill(n)(random.nextLong() & mask)
      val packed = new ByteSink()
      BitPacking.pack(values, 0, n, w, t, packed)
      // Unpacked behind a value already in the output, which must stay, into bytes not zeroed
      // (readers reuse their arrays): every value is written, zeros too.
      val out = Array.fill[Byte]((n + 1) * bytes)(0x5a)
      FastLanes.unpack(packed.array, 0, w, t, n, out, 1)
      assert(out.take(bytes).forall(_ == 0x5a))
      val got = Array.tabulate(n)(i => Bytes.uN(out, (i + 1) * bytes, bytes))
      val want = values.map(v => if (t == 64) v else v & ((1L << t) - 1))
      assert(got.sameElements(want), s"width $w")
      val alone = Array.tabulate(n)(i => FastLanes.valueAt(packed.array, 0, w, t, i))
      assert(alone.sameElements(want), s"width $w, values one by one")
    }
  }
}
