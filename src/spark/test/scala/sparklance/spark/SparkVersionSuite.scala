package sparklance.spark

import org.scalatest.funsuite.AnyFunSuite

/**
 * The spark module's tests run on the Spark the build names (its own, or the installation
 * SPARKLANCE_TEST_SPARK_JARS points at): a classpath that still held the build's Spark would pass
 * every other suite while testing nothing new.
 */
class SparkVersionSuite extends AnyFunSuite {
  test("the tests run on the Spark the build says they run on") {
    val expected = Option(System.getProperty("sparklance.test.sparkVersion"))
    assert(expected.isDefined, "the build sets sparklance.test.sparkVersion for the test JVM (build.sbt)")
    info(s"Spark ${org.apache.spark.SPARK_VERSION} from ${classOf[org.apache.spark.SparkContext].getProtectionDomain.getCodeSource.getLocation}")
    assert(org.apache.spark.SPARK_VERSION == expected.get)
  }
}
