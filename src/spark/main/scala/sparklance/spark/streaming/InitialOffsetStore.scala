package sparklance.spark.streaming

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Keeps the offset a query starts from in the directory Spark gives the source in the checkpoint
 * (`<checkpoint>/sources/<n>`). Spark logs only a batch's end offset: a query restarted before its
 * first batch committed asks the source for its initial offset again, and a default start (the
 * latest version, a timestamp, `latest`) resolved anew could then lie elsewhere. Written once,
 * through a temporary file renamed into place, so a crash leaves no partial file.
 */
final class InitialOffsetStore(checkpointLocation: String, hadoopConf: Configuration) {
  private val path = new Path(checkpointLocation, InitialOffsetStore.FileName)

  /** The stored offset, or `resolve`'s, stored first. */
  def getOrStore(resolve: => LanceSourceOffset): LanceSourceOffset = {
    val fs = path.getFileSystem(hadoopConf)
    if (fs.exists(path)) read(fs)
    else {
      val offset = resolve
      val tmp = new Path(path.getParent, s".${InitialOffsetStore.FileName}.${java.util.UUID.randomUUID()}.tmp")
      val out = fs.create(tmp, false)
      try out.write(offset.json().getBytes(UTF_8)) finally out.close()
      // Another start of the same query won the race: its offset is the one.
      if (!fs.rename(tmp, path)) { fs.delete(tmp, false); read(fs) } else offset
    }
  }

  private def read(fs: org.apache.hadoop.fs.FileSystem): LanceSourceOffset = {
    val in = fs.open(path)
    val text = try new String(in.readAllBytes(), UTF_8) finally in.close()
    LanceSourceOffset.fromJson(text, path.toString)
  }
}

object InitialOffsetStore {
  val FileName = "lance-initial-offset.json"
}
