// sparklance: Lance tables in pure JVM code, and a Spark DataSource V2 catalog over them.
//
// Three modules, whose dependencies enforce the layers (the compiler refuses a Spark or Hadoop
// import where the module does not depend on it):
//   format  src/format  the Lance table and file format: Arrow, RoaringBitmap, protobuf, codecs
//   hadoop  src/hadoop  storage over Hadoop's FileSystem (HDFS, S3A, GCS, ABFS); needs format
//   spark   src/spark   the DataSource V2 plugin; its assembly is the jar the Python package ships
ThisBuild / organization := "io.sparklance"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

val sparkVersion = "4.2.0"
val arrowVersion = "19.0.0"
val protobufVersion = "4.33.5"
val luceneVersion = "9.12.3" // the last Lucene line that runs on Java 17
val hadoopVersion = "3.5.0" // the Hadoop client Spark 4.2.0 ships

// Libraries Spark 4.2.0 ships, at its versions: provided at run time by Spark, or by whatever
// engine or application uses the format module on its own (docs/format-library.md lists them).
val shippedBySpark = Seq(
  "org.apache.arrow" % "arrow-vector" % arrowVersion,
  "org.apache.arrow" % "arrow-memory-netty" % arrowVersion,
  "org.roaringbitmap" % "RoaringBitmap" % "1.6.10",
  "com.github.luben" % "zstd-jni" % "1.5.7-7",
  "at.yawk.lz4" % "lz4-java" % "1.11.0",
  "org.apache.commons" % "commons-compress" % "1.28.0",
  "com.fasterxml.jackson.core" % "jackson-databind" % "2.21.2"
).map(_ % Provided)

val hadoopClient = Seq(
  "org.apache.hadoop" % "hadoop-client-api" % hadoopVersion % Provided,
  "org.apache.hadoop" % "hadoop-client-runtime" % hadoopVersion % Provided,
  // An in-process HDFS (MiniDFSCluster) for the storage tests; the shaded jar that matches the
  // hadoop-client-api/-runtime Spark ships, so Spark's own classpath is unchanged.
  "org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion % Test
)

val scalatest = "org.scalatest" %% "scalatest" % "3.2.19" % Test

// Spark needs these module openings on Java 17 (the same list spark-submit passes).
val javaModuleOptions = Seq(
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
)

// Tests of all modules run one forked JVM at a time, from the repository root (where the tests
// find the project's .venv), as they did in one module.
Global / concurrentRestrictions += Tags.limit(Tags.ForkedTestGroup, 1)

/** The temporary directory of a module's test JVM. */
lazy val testTmp = settingKey[File]("java.io.tmpdir of the forked test JVM")

/** A module under src/<dir>, with its sources in main/ and test/ there. */
def module(id: String, dir: String): Project = Project(id, file(s"src/$dir")).settings(
  name := s"sparklance-$dir",
  scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
  javacOptions ++= Seq("--release", "17"),
  Compile / scalaSource := (ThisBuild / baseDirectory).value / "src" / dir / "main" / "scala",
  Compile / javaSource := (ThisBuild / baseDirectory).value / "src" / dir / "main" / "java",
  Compile / resourceDirectory := (ThisBuild / baseDirectory).value / "src" / dir / "main" / "resources",
  Test / scalaSource := (ThisBuild / baseDirectory).value / "src" / dir / "test" / "scala",
  Test / javaSource := (ThisBuild / baseDirectory).value / "src" / dir / "test" / "java",
  Test / resourceDirectory := (ThisBuild / baseDirectory).value / "src" / dir / "test" / "resources",
  libraryDependencies += scalatest,
  testTmp := target.value / "test-tmp",
  Test / fork := true,
  Test / forkOptions := (Test / forkOptions).value.withWorkingDirectory((ThisBuild / baseDirectory).value),
  Test / javaOptions ++= javaModuleOptions ++ Seq("-Xmx4g", s"-Djava.io.tmpdir=${testTmp.value}"),
  // Temporary tables, warehouses and scripts of a test run stay under target/, emptied before and
  // after each run, instead of piling up in the machine's /tmp.
  Test / testOptions += Tests.Setup(() => { IO.delete(testTmp.value); IO.createDirectory(testTmp.value) }),
  Test / testOptions += Tests.Cleanup(() => IO.delete(testTmp.value)),
  Test / parallelExecution := false,
  Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD")
)

lazy val format = module("format", "format")
  .settings(
    libraryDependencies ++= shippedBySpark ++ Seq(
      // arrow-compression reads the ZSTD-compressed IPC deletion files pylance writes; Spark does
      // not ship it, so its classes go into the jar (its dependencies are the shipped codecs).
      ("org.apache.arrow" % "arrow-compression" % arrowVersion).excludeAll(ExclusionRule("*", "*")),
      "com.google.protobuf" % "protobuf-java" % protobufVersion,
      // The full-text index reader tokenizes as Lance does: Snowball's English stemmer and ASCII
      // folding come from Lucene's analysis module (shaded into the jar, as protobuf is).
      "org.apache.lucene" % "lucene-analysis-common" % luceneVersion,
      // the well-known .proto files (Timestamp, Empty) for protoc's include path
      "com.google.protobuf" % "protobuf-java" % protobufVersion % "protobuf"
    ),
    Compile / PB.protoSources := Seq((ThisBuild / baseDirectory).value / "protos"),
    Compile / PB.targets := Seq(PB.gens.java(protobufVersion) -> (Compile / sourceManaged).value / "protobuf"),
    PB.protocVersion := protobufVersion,
    // The version written into manifests as writer_version, from the one version of the build.
    Compile / sourceGenerators += Def.task {
      val out = (Compile / sourceManaged).value / "sparklance" / "format" / "BuildInfo.scala"
      IO.write(out,
        s"""package sparklance.format
           |
           |/** Generated by build.sbt: the version this library writes into manifests as writer_version. */
           |object BuildInfo {
           |  val version: String = "${version.value}"
           |}
           |""".stripMargin)
      Seq(out)
    }.taskValue
  )

lazy val hadoop = module("hadoop", "hadoop")
  .dependsOn(format % "compile->compile;test->test")
  .settings(libraryDependencies ++= shippedBySpark ++ hadoopClient)

// Another Spark installation the spark module's tests run on (see project/OtherSpark.scala): by
// default the one SPARKLANCE_TEST_SPARK_JARS names, if any. ./dev/test runs them on the build's
// Spark and then, in the same sbt, on .venv's pyspark (`set spark / otherSpark := ...`), which
// spares a second sbt start. The tests check they run on the Spark named here.
lazy val otherSpark = settingKey[Option[OtherSpark]]("another Spark installation to run the spark module's tests on")

// Of Lucene the full-text index reader uses only the Snowball English stemmer and ASCII folding,
// with the analysis and util classes their loading needs (TokenStream's initializer builds an
// attribute factory); the rest (codecs, index, search, other languages) would double the jar.
def unusedLucene(path: String): Boolean = {
  val lucene = "sparklance/shaded/lucene/"
  val snowball = "sparklance/shaded/tartarus/snowball/ext/"
  if (path.startsWith("META-INF/services/sparklance.shaded.lucene.")) true
  else if (path.startsWith(lucene)) {
    val rest = path.stripPrefix(lucene)
    !(rest.matches("(analysis|util)/[^/]+") || rest.startsWith("analysis/tokenattributes/") ||
      rest.startsWith("analysis/miscellaneous/ASCIIFoldingFilter"))
  } else path.startsWith(snowball) && !path.startsWith(snowball + "EnglishStemmer")
}

lazy val spark = module("spark", "spark")
  .dependsOn(format % "compile->compile;test->test", hadoop % "compile->compile;test->test")
  .settings(
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % Provided
    ) ++ hadoopClient.filter(_.configurations.contains("test")),
    otherSpark := OtherSpark.fromEnvironment,
    // The classpath tests run with, not the one they compile against.
    Test / fullClasspath := otherSpark.value.fold((Test / fullClasspath).value)(_.replace((Test / fullClasspath).value)),
    Test / javaOptions += s"-Dsparklance.test.sparkVersion=${otherSpark.value.fold(sparkVersion)(_.version)}",
    Test / testOptions += {
      val other = otherSpark.value
      Tests.Setup(() => println(s"spark module tests run on Spark ${other.fold(sparkVersion)(_.version)}" +
        other.fold(" (the build's)")(o => s" from ${o.jars}")))
    },
    assembly / assemblyJarName := "sparklance.jar",
    // Where the README and ./dev/setup find the jar.
    assembly / assemblyOutputPath := (ThisBuild / baseDirectory).value / "target" / "scala-2.13" / "sparklance.jar",
    assembly / assemblyOption ~= { _.withIncludeScala(false) },
    assembly / assemblyShadeRules := Seq(
      ShadeRule.rename("com.google.protobuf.**" -> "sparklance.shaded.protobuf.@1").inAll,
      ShadeRule.rename("org.apache.lucene.**" -> "sparklance.shaded.lucene.@1").inAll,
      ShadeRule.rename("org.tartarus.**" -> "sparklance.shaded.tartarus.@1").inAll
    ),
    assembly / assemblyMergeStrategy := {
      case PathList("META-INF", "MANIFEST.MF") => MergeStrategy.discard
      case PathList("META-INF", xs @ _*) if xs.lastOption.exists(_.endsWith(".SF")) => MergeStrategy.discard
      case PathList("META-INF", "versions", _ @ _*) => MergeStrategy.first
      case PathList("module-info.class") => MergeStrategy.discard
      case x if x.endsWith(".proto") => MergeStrategy.discard
      case x if unusedLucene(x) => MergeStrategy.discard
      case x => (assembly / assemblyMergeStrategy).value(x)
    }
  )

// The S3A connector for s3a:// warehouses: not in the plugin jar (users add the connector matching
// their Spark's Hadoop, as for any S3A use), but resolved by `sbt s3Connector` into
// target/s3-connector/ for the tests and the demo. hadoop-aws alone, since Spark ships the rest of
// Hadoop; of the AWS SDK v2 only the modules S3A loads (S3, its transfer manager, STS), not the
// 655 MiB bundle hadoop-aws declares.
val S3Connector = config("s3connector").hide
val awsSdkVersion = "2.35.4" // the SDK hadoop-aws 3.5.0 is built against
lazy val s3Connector = taskKey[File]("Copies the S3A connector jars into target/s3-connector/")

lazy val root = (project in file("."))
  .aggregate(format, hadoop, spark)
  .settings(
    ivyConfigurations += S3Connector,
    libraryDependencies ++= Seq(
      ("org.apache.hadoop" % "hadoop-aws" % hadoopVersion % S3Connector).intransitive(),
      "software.amazon.awssdk" % "s3" % awsSdkVersion % S3Connector,
      "software.amazon.awssdk" % "s3-transfer-manager" % awsSdkVersion % S3Connector,
      "software.amazon.awssdk" % "sts" % awsSdkVersion % S3Connector,
      "software.amazon.s3.analyticsaccelerator" % "analyticsaccelerator-s3" % "1.3.1" % S3Connector
    ).map(_.excludeAll(ExclusionRule("org.slf4j"), ExclusionRule("io.netty"))),
    s3Connector := {
      val out = target.value / "s3-connector"
      val jars = update.value.select(configurationFilter(S3Connector.name)).distinct
      IO.delete(out)
      jars.foreach(j => IO.copyFile(j, out / j.getName))
      streams.value.log.info(s"${jars.size} S3A connector jars in $out")
      out
    },
    name := "sparklance",
    publish / skip := true,
    // `sbt assembly` builds the plugin jar only.
    assembly / aggregate := false,
    assembly := (spark / assembly).value
  )
