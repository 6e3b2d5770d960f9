package sparklance.spark.indexing

import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{Zone, ZoneBuilder, ZoneValues}
import sparklance.format.table.{BasePaths, FragmentScanner, LanceField, LanceSchema}
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

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
    // Lance fields travel as their protobuf form (Arrow types are not serializable).
    try run(sc, files, storageConf, fragments.map(_.toByteArray), LanceSchema(Seq(field)).toProto.map(_.toByteArray), rowsPerZone)
    finally sc.setJobDescription(previous)
  }

  // Separate so the closure Spark ships captures only these serializable values.
  private def run(sc: org.apache.spark.SparkContext, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[Array[Byte]], fieldBytes: Seq[Array[Byte]], rowsPerZone: Long): Seq[Zone] =
    sc.parallelize(fragments, math.max(1, fragments.size)).flatMap { bytes =>
      val fragment = DataFragment.parseFrom(bytes)
      val field = LanceSchema.fromProto(fieldBytes.map(FileProtos.Field.parseFrom), java.util.Map.of()).fields.head
      val storage = Storages.forPath(files.tablePath, storageConf)
      val builder = new ZoneBuilder(fragment.getId, rowsPerZone)
      Using.resource(Allocators.child(s"zones ${field.name} of ${files.tablePath} fragment ${fragment.getId}")) { allocator =>
        Using.resource(new FragmentScanner(storage, files, fragment, Seq(field), allocator, 0, fragment.getPhysicalRows)) { scanner =>
          scanner.foreach { batch =>
            try {
              val vector = batch.vectors.head
              var i = 0
              while (i < batch.numRows) {
                builder.add(Integer.toUnsignedLong(batch.offsets(i)), ZoneValues.at(vector, i))
                i += 1
              }
            } finally batch.close()
          }
        }
      }
      builder.result()
    }.collect().toSeq
}
