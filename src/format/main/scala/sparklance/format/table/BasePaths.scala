package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.CorruptFileException
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment, IndexMetadata, Manifest}

/**
 * Where the files of one table version are (feature flag 16): a data file, deletion file or index
 * without a base id is under the table's own directory; one with a base id is under the manifest's
 * base path of that id. Shallow clones and branches name their source this way (a branch's parent
 * is base 0 when it is the main line, a named base when it is another branch), and only files a
 * table writes itself lack a base id. A base that is a dataset root keeps Lance's sub-directories
 * (`data/`, `_deletions/`, `_indices/`); any other base holds the files themselves.
 *
 * Serializable: scan tasks carry it to executors.
 */
final case class BasePaths(tablePath: String, bases: Map[Int, BasePaths.Base]) {
  /** The path of data file `f`. */
  def dataFile(f: DataFile): String = Storage.join(dataDir(f), f.getPath)

  /** The directory of data file `f`, under which its blob sidecar files (`<file key>/<n>.blob`) are too. */
  def dataDir(f: DataFile): String = dir(if (f.hasBaseId) Some(f.getBaseId) else None, "data")

  /** The path of `fragment`'s deletion file (which it must have). */
  def deletionFile(fragment: DataFragment): String = {
    val d = fragment.getDeletionFile
    val relative = DeletionFiles.relativePath(fragment.getId, d) // "_deletions/<name>"
    Storage.join(dir(if (d.hasBaseId) Some(d.getBaseId) else None, "_deletions"), relative.stripPrefix("_deletions/"))
  }

  /** The directory holding the files of index segment `index`. */
  def indexDir(index: IndexMetadata): String =
    Storage.join(dir(if (index.hasBaseId) Some(index.getBaseId) else None, "_indices"), Indices.directory(index))

  /**
   * The path of a blob stored by a URI relative to base path `id` (an external or managed blob
   * whose descriptor's blob id is that base): the URI under the base's own path, whether or not
   * the base is a dataset root, as pylance 14 resolves it.
   */
  def blob(id: Int, relative: String): String = Storage.join(base(id).path, relative)

  private def dir(id: Option[Int], sub: String): String = id match {
    case None => Storage.join(tablePath, sub)
    case Some(i) =>
      val b = base(i)
      if (b.isDatasetRoot) Storage.join(b.path, sub) else b.path
  }

  private def base(id: Int): BasePaths.Base = bases.getOrElse(id, throw new CorruptFileException(tablePath,
    s"a file names base path $id, which the manifest does not list (it lists ${bases.keys.toSeq.sorted.mkString(", ")})"))
}

object BasePaths {
  /** A manifest's `base_paths` entry; `path` as this library's storage takes it. */
  final case class Base(id: Int, name: Option[String], isDatasetRoot: Boolean, path: String)

  /** A table whose files are all its own (no base paths). */
  def own(tablePath: String): BasePaths = BasePaths(tablePath, Map.empty)

  def of(tablePath: String, manifest: Manifest): BasePaths =
    BasePaths(tablePath, manifest.getBasePathsList.asScala.map { b =>
      b.getId -> Base(b.getId, if (b.hasName) Some(b.getName) else None, b.getIsDatasetRoot, location(tablePath, b.getPath))
    }.toMap)

  /**
   * A base's path as our storage opens it. Lance writes a local base as a plain absolute path and an
   * object store's as its URI (`s3://bucket/...`, where Hadoop's connector for the table is `s3a`), and
   * one opened by URI as `file:///...`, where our local tables have plain paths.
   */
  def location(tablePath: String, path: String): String = {
    val stripped = if (path.length > 1) path.stripSuffix("/") else path
    (Storage.scheme(tablePath), Storage.scheme(stripped)) match {
      case (Some("s3a"), Some("s3")) => "s3a" + stripped.substring(2)
      case (None, Some("file")) => java.nio.file.Paths.get(java.net.URI.create(stripped)).toString
      case _ => stripped
    }
  }
}
