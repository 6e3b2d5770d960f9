package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/**
 * Columns of a fragment rewritten in place, as pylance's `update_columns` records it: the new
 * file (holding those fields for every physical row) is appended, and the old files list the
 * rewritten field ids as -2, so that readers take them from the new file only.
 */
object ColumnFiles {
  def replaced(fragment: DataFragment, file: DataFile): DataFragment = {
    val ids = file.getFieldsList.asScala.map(_.intValue).toSet
    val old = fragment.getFilesList.asScala.map(d => d.toBuilder.clearFields()
      .addAllFields(d.getFieldsList.asScala.map(id => if (ids(id.intValue)) Int.box(-2) else id).asJava).build())
    fragment.toBuilder.clearFiles().addAllFiles(old.asJava).addFiles(file).build()
  }
}
