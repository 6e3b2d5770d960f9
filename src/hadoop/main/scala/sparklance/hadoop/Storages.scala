package sparklance.hadoop

import sparklance.format.io.{LocalStorage, Storage}

/** Picks the storage for a table location. */
object Storages {
  /**
   * [[LocalStorage]] for plain paths and `file:` URIs, a [[HadoopStorage]] configured with `conf`
   * (Hadoop keys; `spark.hadoop.` prefixes are dropped) for any other scheme (`hdfs://`, `s3a://`,
   * `gs://`, `abfss://`, ...).
   */
  def forPath(uri: String, conf: Map[String, String] = Map.empty): Storage = Storage.scheme(uri) match {
    case None | Some("file") => LocalStorage
    case Some(_) => HadoopStorage.fromConf(conf)
  }
}
