package sparklance.spark.maintenance

import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.commit.Operation
import sparklance.format.maintenance.{Compaction, CompactionTask, TaskRewriter}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{WrittenZones, ZoneColumn}
import sparklance.format.table.Dataset
import sparklance.hadoop.Storages
import sparklance.spark.{Allocators, CatalogSettings}
import sparklance.spark.layout.{LayoutRewrite, RowLayout}

/**
 * Runs the tasks of a compaction plan as one Spark job, a task per rewrite group, so a large
 * table compacts on every executor. Tasks travel as protobuf bytes and open the planned version
 * themselves and return the zones of the zone map columns they gathered; the driver only plans
 * and commits.
 */
object DistributedCompaction {
  /** Tasks that keep their rows' order, or with a `layout`, tasks that order them by it (see [[LayoutRewrite]]). */
  def runner(spark: SparkSession, tableName: String, settings: CatalogSettings, layout: Option[RowLayout] = None): Compaction.TaskRunner =
    layout.fold(inOrder(spark, tableName, settings))(LayoutRewrite.runner(spark, tableName, _, settings))

  private def inOrder(spark: SparkSession, tableName: String, settings: CatalogSettings): Compaction.TaskRunner =
    (dataset, snapshot, tasks, zoneColumns) => {
      val work = tasks.zipWithIndex.map { case (t, i) => (i, t.fragments.map(_.toByteArray).toArray, t.liveRows, t.targetRows) }
      val written = run(spark, tableName, dataset.path, snapshot.version, settings.storageConf, zoneColumns, work).toMap
      tasks.zipWithIndex.map { case (t, i) =>
        val (fragments, zones) = written(i)
        Operation.RewriteGroup(t.fragments, fragments.toSeq.map(DataFragment.parseFrom), zones)
      }
    }

  // Separate from `runner` so the closure Spark ships captures only these serializable values.
  private def run(spark: SparkSession, tableName: String, path: String, version: Long, storageConf: Map[String, String],
      zoneColumns: Seq[ZoneColumn], work: Seq[(Int, Array[Array[Byte]], Long, Long)]): Array[(Int, (Array[Array[Byte]], WrittenZones))] = {
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"compact $tableName: rewrite ${work.size} group(s) of version $version")
    try sc.parallelize(work, math.max(1, work.size)).map { case (i, fragments, liveRows, targetRows) =>
      val storage = Storages.forPath(path, storageConf)
      val snapshot = new Dataset(storage, path).snapshot(Some(version))
      val task = CompactionTask(fragments.toSeq.map(DataFragment.parseFrom), liveRows, targetRows)
      val group = Using.resource(Allocators.child(s"compact $path group $i"))(TaskRewriter.rewrite(storage, snapshot, task, _, zoneColumns))
      i -> (group.newFragments.map(_.toByteArray).toArray, group.zones)
    }.collect()
    finally sc.setJobDescription(previous)
  }
}
