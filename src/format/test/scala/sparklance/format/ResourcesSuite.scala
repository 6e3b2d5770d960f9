package sparklance.format

import scala.collection.mutable.ArrayBuffer
import org.scalatest.funsuite.AnyFunSuite

class ResourcesSuite extends AnyFunSuite {
  private val log = ArrayBuffer.empty[String]
  private def ok(name: String): AutoCloseable = () => log += name
  private def failing(name: String): AutoCloseable = () => { log += name; throw new IllegalStateException(name) }

  test("closeAll closes every resource; the first failure is thrown, the later ones suppressed") {
    log.clear()
    val e = intercept[IllegalStateException](Resources.closeAll(Seq(ok("a"), failing("b"), null, failing("c"), ok("d"))))
    assert(log == Seq("a", "b", "c", "d"))
    assert(e.getMessage == "b" && e.getSuppressed.map(_.getMessage).toSeq == Seq("c"))
  }

  test("closeOnFailure closes what was opened so far, keeping the body's error first") {
    log.clear()
    val opened = ArrayBuffer.empty[AutoCloseable]
    val e = intercept[IllegalArgumentException](Resources.closeOnFailure(opened) {
      opened += ok("a"); opened += failing("b")
      throw new IllegalArgumentException("body")
    })
    assert(log == Seq("a", "b"))
    assert(e.getMessage == "body" && e.getSuppressed.map(_.getMessage).toSeq == Seq("b"))
    assert(Resources.closeOnFailure(Seq(failing("never")))(42) == 42 && log == Seq("a", "b"))
  }
}
