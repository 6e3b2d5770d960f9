import sbt._

/**
 * Another Spark installation's jars directory (a Spark distribution's jars/, or pyspark/jars of a
 * pyspark package) to run the spark module's tests on, in place of the Spark the build compiles
 * against. Its jars replace every managed jar of the same artifact on the test classpath (Spark
 * and the libraries it ships, at whatever version it ships them), so the tests run as the plugin
 * runs in that installation; the project's own classes stay compiled against the build's Spark.
 */
final case class OtherSpark(jars: File) {
  private val installed: Seq[File] = Option(jars.listFiles()).toSeq.flatten.filter(_.getName.endsWith(".jar")).sortBy(_.getName)
  require(installed.nonEmpty, s"$jars holds no jars: point ${OtherSpark.EnvVar} at a Spark installation's jars directory")

  /** The installation's Spark version, from its spark-core jar. */
  val version: String = installed.map(_.getName).collectFirst { case OtherSpark.Versioned("spark-core_2.13", v) => v }
    .getOrElse(sys.error(s"$jars has no spark-core_2.13 jar: not a Spark 4 installation's jars directory"))

  /**
   * `classpath` with each jar the installation also provides (by artifact name, any version)
   * replaced by the installation's jars; directories (the project's classes) stay first.
   */
  def replace(classpath: Seq[Attributed[File]]): Seq[Attributed[File]] = {
    val provided = installed.map(f => OtherSpark.artifact(f.getName)).toSet
    val (classes, managed) = classpath.partition(_.data.isDirectory)
    classes ++ installed.map(Attributed.blank) ++ managed.filterNot(j => provided(OtherSpark.artifact(j.data.getName)))
  }
}

object OtherSpark {
  /** The environment variable naming the jars directory; unset or empty: the build's own Spark. */
  val EnvVar = "SPARKLANCE_TEST_SPARK_JARS"

  def fromEnvironment: Option[OtherSpark] = sys.env.get(EnvVar).filter(_.nonEmpty).map(d => OtherSpark(file(d)))

  // <artifact>-<version>[-<classifier>].jar, where every part of the version starts with a digit:
  // zstd-jni-1.5.7-7.jar, log4j-1.2-api-2.24.3.jar, netty-transport-native-epoll-4.1.118.Final-linux-x86_64.jar
  private val Versioned = """(.+?)-(\d[^-]*(?:-\d[^-]*)*)(?:-[A-Za-z][^.]*)?\.jar""".r

  /** The artifact a jar file holds, from its name (the whole name when it carries no version). */
  def artifact(fileName: String): String = fileName match {
    case Versioned(name, _) => name
    case other => other
  }
}
