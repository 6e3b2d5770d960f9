package sparklance.format.skipping

import sparklance.format.proto.TableProtos.DataFragment

/**
 * The zones of the data files a write produced, gathered while their rows were written (no read
 * of the files afterwards): per data file (its path under `data/`), per field id, in offset order.
 * A zone's `fragmentId` means nothing here: fragment ids are assigned at commit. Serializable, so
 * write tasks return it to the driver with their fragments.
 */
final case class WrittenZones(files: Map[String, Map[Int, Seq[Zone]]]) {
  def ++(other: WrittenZones): WrittenZones = WrittenZones(files ++ other.files)

  /**
   * The zones of field `fieldId` over `fragments` (new fragments of one data file each), their
   * `fragmentId` the fragment's position in `fragments`; None if a fragment's zones are unknown.
   */
  def of(fieldId: Int, fragments: Seq[DataFragment]): Option[Seq[Zone]] = {
    val perFragment = fragments.zipWithIndex.map { case (f, i) =>
      (if (f.getFilesCount == 1) files.get(f.getFiles(0).getPath) else None).flatMap(_.get(fieldId))
        .map(_.map(_.copy(fragmentId = i.toLong)))
    }
    if (perFragment.forall(_.isDefined)) Some(perFragment.flatten.flatten) else None
  }
}

object WrittenZones {
  val Empty: WrittenZones = WrittenZones(Map.empty)
}
