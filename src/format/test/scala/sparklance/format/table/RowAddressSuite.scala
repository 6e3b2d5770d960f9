package sparklance.format.table

import org.scalatest.funsuite.AnyFunSuite

class RowAddressSuite extends AnyFunSuite {
  test("offsets of 2^31 and more (negative Ints) stay in the low 32 bits") {
    assert(RowAddress.of(3, Int.MinValue) == (3L << 32) + (1L << 31))
    assert(RowAddress.of(3, -1) == (3L << 32) + 0xFFFFFFFFL)
    assert(RowAddress.of(0, -1) == 0xFFFFFFFFL)
    assert(RowAddress.of(0xFFFFFFFFL, -1) == -1L)
  }

  test("addresses come apart into the fragment id and the unsigned offset") {
    for (fragment <- Seq(0L, 1L, 0x7FFFFFFFL, 0x80000000L, 0xFFFFFFFFL);
         offset <- Seq(0, 1, Int.MaxValue, Int.MinValue, -1)) {
      val address = RowAddress.of(fragment, offset)
      assert(RowAddress.fragmentId(address) == fragment)
      assert(RowAddress.offset(address) == Integer.toUnsignedLong(offset))
      assert(RowAddress.offset(address).toInt == offset)
    }
  }
}
