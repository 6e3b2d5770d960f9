package sparklance.spark

import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.table.StorageVersion
import sparklance.spark.scan.ReadTarget
import sparklance.spark.write.WriteTarget
import sparklance.format.table.BasePaths

class RedactedSettingsSuite extends AnyFunSuite {
  private val conf = Map("fs.s3a.secret.key" -> "s3cr3t-value", "fs.azure.sas.token" -> "t0ken-value",
    "fs.defaultFS" -> "hdfs://nn-host:8020")

  test("settings and task targets show storage keys, never their values") {
    val settings = CatalogSettings(Map("hadoop.fs.s3a.secret.key" -> "s3cr3t-value"), Map(
      "spark.hadoop.fs.azure.sas.token" -> "t0ken-value", "spark.hadoop.fs.defaultFS" -> "hdfs://nn-host:8020"))
    val shown = Seq(
      settings.toString,
      ReadTarget("lance.db.t", BasePaths.own("s3a://b/t.lance"), Nil, StructType(Seq(StructField("id", LongType))), conf, 32L << 20).toString,
      WriteTarget("lance.db.t", BasePaths.own("s3a://b/t.lance"), Array.empty[Array[Byte]], StorageVersion.V2_2, 10L, conf).toString)
    shown.foreach { s =>
      Seq("s3cr3t-value", "t0ken-value", "nn-host").foreach(secret => assert(!s.contains(secret), s))
      assert(s.contains("fs.s3a.secret.key=***") && s.contains("fs.azure.sas.token=***"), s)
    }
    assert(settings.toString.contains("commitRetries=20") && shown.tail.forall(_.contains("lance.db.t")))
  }
}
