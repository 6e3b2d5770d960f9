package sparklance.format.table

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.LanceException

class VersionNamingSuite extends AnyFunSuite {
  test("V2 names invert the version into 20 digits so the newest sorts first") {
    assert(VersionNaming.V2.fileName(1) == "18446744073709551614.manifest")
    assert(VersionNaming.V2.fileName(1).length == 29)
    assert(VersionNaming.V2.fileName(2) < VersionNaming.V2.fileName(1))
    assert(VersionNaming.V2.fileName(0) == "18446744073709551615.manifest")
    Seq(1L, 2L, 99L, 123456789L).foreach(v => assert(VersionNaming.parse(VersionNaming.V2.fileName(v)).contains(VersionNaming.V2 -> v)))
  }

  test("V1 names and non-manifest files") {
    assert(VersionNaming.parse("7.manifest").contains(VersionNaming.V1 -> 7L))
    assert(VersionNaming.parse("d7.manifest").isEmpty)
    assert(VersionNaming.parse("latest_version_hint.json").isEmpty)
    assert(VersionNaming.parse(".tmp-1.partial").isEmpty)
  }

  test("a listing that mixes schemes is refused") {
    intercept[LanceException](VersionNaming.scan("t", Seq("1.manifest", VersionNaming.V2.fileName(2))))
    assert(VersionNaming.scan("t", Seq(VersionNaming.V2.fileName(2), VersionNaming.V2.fileName(1)))._2 == Seq(1L, 2L))
  }
}
