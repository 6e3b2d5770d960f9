// sparklance: a Spark DataSource V2 catalog for Lance tables, in pure JVM code.
ThisBuild / organization := "io.sparklance"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

val sparkVersion = "4.2.0"
val arrowVersion = "19.0.0"
val protobufVersion = "4.33.5"
val hadoopVersion = "3.5.0" // the Hadoop client Spark 4.2.0 ships

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

lazy val root = (project in file("."))
  .settings(
    name := "sparklance",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % Provided,
      // Spark ships arrow-vector, RoaringBitmap, zstd-jni and lz4-java; arrow-compression it does
      // not, and it is needed to read the ZSTD-compressed IPC deletion files pylance writes.
      ("org.apache.arrow" % "arrow-compression" % arrowVersion).excludeAll(ExclusionRule("*", "*")),
      "com.google.protobuf" % "protobuf-java" % protobufVersion,
      // the well-known .proto files (Timestamp, Empty) for protoc's include path
      "com.google.protobuf" % "protobuf-java" % protobufVersion % "protobuf",
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      // An in-process HDFS (MiniDFSCluster) for the storage tests; the shaded jar that matches the
      // hadoop-client-api/-runtime Spark ships, so Spark's own classpath is unchanged.
      "org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion % Test
    ),
    Compile / PB.protoSources := Seq(baseDirectory.value / "protos"),
    Compile / PB.targets := Seq(PB.gens.java(protobufVersion) -> (Compile / sourceManaged).value / "protobuf"),
    PB.protocVersion := protobufVersion,

    Test / fork := true,
    Test / javaOptions ++= javaModuleOptions ++ Seq("-Xmx4g"),
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),

    assembly / assemblyJarName := "sparklance.jar",
    assembly / assemblyOption ~= { _.withIncludeScala(false) },
    assembly / assemblyShadeRules := Seq(
      ShadeRule.rename("com.google.protobuf.**" -> "sparklance.shaded.protobuf.@1").inAll
    ),
    assembly / assemblyMergeStrategy := {
      case PathList("META-INF", "MANIFEST.MF") => MergeStrategy.discard
      case PathList("META-INF", xs @ _*) if xs.lastOption.exists(_.endsWith(".SF")) => MergeStrategy.discard
      case PathList("META-INF", "versions", _ @ _*) => MergeStrategy.first
      case PathList("module-info.class") => MergeStrategy.discard
      case x if x.endsWith(".proto") => MergeStrategy.discard
      case x => (assembly / assemblyMergeStrategy).value(x)
    }
  )
