package sparklance.spark

import java.nio.file.Path
import org.apache.hadoop.fs.FileSystem
import org.apache.spark.sql.SparkSession

/**
 * A local session whose catalog `catalog` keeps its warehouse under `root` through a test's
 * Hadoop file system, registered for its scheme (uncached: each test's is its own). A suite's
 * statements run one at a time, so the file system's create(overwrite = false) is put-if-absent
 * enough.
 */
object TestFileSystemCatalog {
  def builder(appName: String, catalog: String, scheme: String, fileSystem: Class[_ <: FileSystem], root: Path): SparkSession.Builder =
    SparkSession.builder().master("local[2]").appName(appName)
      .config(s"spark.sql.catalog.$catalog", classOf[LanceCatalog].getName)
      .config(s"spark.sql.catalog.$catalog.warehouse", s"$scheme://$root/wh")
      .config(s"spark.sql.catalog.$catalog.hadoop.fs.$scheme.impl", fileSystem.getName)
      .config(s"spark.sql.catalog.$catalog.hadoop.fs.$scheme.impl.disable.cache", "true")
      .config(s"spark.sql.catalog.$catalog.hadoop.sparklance.storage.$scheme.putIfAbsent", "create")
}
