package sparklance.format.table

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.UnsupportedFeatureException

class FeatureFlagsSuite extends AnyFunSuite {
  test("flags 1, 2 and 8 are accepted") {
    FeatureFlags.check("t", 1, 1 | 2 | 8, 1 | 2 | 8, forWrite = true)
  }

  test("any other bit is refused with its number in the message") {
    val e = intercept[UnsupportedFeatureException](FeatureFlags.check("t", 3, 1 | 64, 0, forWrite = false))
    assert(e.getMessage.contains("64") && e.getMessage.contains("version 3"))
    val w = intercept[UnsupportedFeatureException](FeatureFlags.check("t", 3, 0, 1L << 40, forWrite = true))
    assert(w.getMessage.contains((1L << 40).toString))
    // A writer-only flag does not stop readers.
    FeatureFlags.check("t", 3, 0, 1L << 40, forWrite = false)
  }
}
