package sparklance.hadoop

import java.nio.file.Path
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.hdfs.MiniDFSCluster

/** An in-process HDFS of one DataNode for tests: single replicas, no permissions, no web ports. */
object MiniHdfs {
  def start(baseDir: Path): MiniDFSCluster = {
    val conf = new Configuration()
    conf.set("dfs.replication", "1")
    conf.setBoolean("dfs.permissions.enabled", false)
    conf.set("dfs.namenode.http-address", "localhost:0")
    conf.set("dfs.datanode.http.address", "localhost:0")
    val cluster = new MiniDFSCluster.Builder(conf, baseDir.toFile).numDataNodes(1).format(true).build()
    cluster.waitActive()
    cluster
  }
}
