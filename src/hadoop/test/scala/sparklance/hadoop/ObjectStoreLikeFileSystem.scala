package sparklance.hadoop

import java.net.URI
import org.apache.hadoop.fs.RawLocalFileSystem

/**
 * A local directory tree under a made-up `fakeobj:` scheme, standing in for an object store that
 * declares no conditional create: HadoopStorage must refuse to commit to it unless told how.
 */
class ObjectStoreLikeFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("fakeobj:///")
  override def getScheme: String = "fakeobj"
}
