package sparklance.format.file.v2_1

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** Integers read in bulk ([[Bytes.uNs]], how bit-packed pages take their values) are those [[Bytes.uN]] reads one by one. */
class BytesSuite extends AnyFunSuite {
  test("uNs reads what uN reads, for every width, at any offset, high bits set") {
    val random = new Random(37)
    for (width <- 1 to 8; _ <- 0 until 20) {
      val n = random.nextInt(3000)
      val at = random.nextInt(9)
      val a = Array.fill(at + n * width + random.nextInt(9))(random.nextInt(256).toByte)
      val bulk = Bytes.uNs(a, at, n, width)
      assert(bulk.length == n)
      assert(bulk.toSeq == (0 until n).map(i => Bytes.uN(a, at + i * width, width)), s"width $width at $at")
    }
  }
}
