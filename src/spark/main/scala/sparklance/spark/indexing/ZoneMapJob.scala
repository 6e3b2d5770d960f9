package sparklance.spark.indexing

import org.apache.spark.sql.SparkSession
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{Zone, ZoneBuilder, ZoneValues}
import sparklance.format.table.{BasePaths, LanceField}

/**
 * The zones of a column over every live row of some fragments, one Spark task a fragment: each
 * reads only that column and summarizes it as [[ZoneBuilder]] does.
 */
object ZoneMapJob {
  def zones(spark: SparkSession, tableName: String, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[DataFragment], field: LanceField, rowsPerZone: Long): Seq[Zone] = {
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"zone map of ${field.name} on $tableName: ${fragments.size} fragment(s)")
    try run(sc, files, storageConf, fragments.map(_.toByteArray), ColumnScan.proto(field), rowsPerZone)
    finally sc.setJobDescription(previous)
  }

  // Separate so the closure Spark ships captures only these serializable values.
  private def run(sc: org.apache.spark.SparkContext, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[Array[Byte]], fieldBytes: Seq[Array[Byte]], rowsPerZone: Long): Seq[Zone] =
    sc.parallelize(fragments, math.max(1, fragments.size)).flatMap { bytes =>
      val fragment = DataFragment.parseFrom(bytes)
      val builder = new ZoneBuilder(fragment.getId, rowsPerZone)
      ColumnScan.foreach(files, storageConf, fragment, fieldBytes) { (vector, i, offset) =>
        builder.add(Integer.toUnsignedLong(offset), ZoneValues.at(vector, i))
      }
      builder.result()
    }.collect().toSeq
}
