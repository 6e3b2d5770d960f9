package sparklance.spark.layout

import org.scalatest.funsuite.AnyFunSuite

/** The curves' defining properties, on every cell of small grids. */
class CurveSuite extends AnyFunSuite {
  private def cells(dims: Int, bits: Int): Seq[Array[Long]] =
    (0L until (1L << (dims * bits))).map(i => Array.tabulate(dims)(d => (i >>> (d * bits)) & ((1L << bits) - 1)))

  for ((dims, bits) <- Seq((1, 4), (2, 1), (2, 3), (2, 5), (3, 2), (3, 3), (4, 2), (6, 10))) {
    val grid = if (dims * bits > 16) Nil else cells(dims, bits)
    if (grid.nonEmpty) test(s"Hilbert on $dims dimensions of $bits bits: a bijection whose consecutive positions are neighbouring cells") {
      val byPosition = grid.map(c => Curve.Hilbert.index(c.clone(), bits) -> c).sortBy(_._1)
      assert(byPosition.map(_._1) == (0L until grid.size.toLong))
      for (Seq((_, a), (_, b)) <- byPosition.sliding(2))
        assert(a.zip(b).map { case (x, y) => math.abs(x - y) }.sum == 1, s"${a.mkString(",")} -> ${b.mkString(",")}")
    }
    if (grid.nonEmpty) test(s"Z-order on $dims dimensions of $bits bits: a bijection, monotone in each coordinate") {
      val positions = grid.map(c => c.toSeq -> Curve.ZOrder.index(c.clone(), bits)).toMap
      assert(positions.values.toSeq.sorted == (0L until grid.size.toLong))
      for ((c, p) <- positions; d <- 0 until dims if c(d) + 1 < (1L << bits))
        assert(positions(c.updated(d, c(d) + 1)) > p)
    }
  }

  test("positions of the widest keys stay non-negative") {
    for (dims <- 1 to 8) {
      val bits = Curve.bitsPerColumn(dims)
      val top = Array.fill(dims)((1L << bits) - 1)
      assert(Curve.Hilbert.index(top, bits) >= 0 && Curve.ZOrder.index(top, bits) >= 0)
      assert(Curve.boundaryCount(dims) + 1 < (1L << bits))
    }
  }
}
