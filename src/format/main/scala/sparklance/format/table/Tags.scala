package sparklance.format.table

import java.time.Instant
import scala.util.control.NonFatal
import sparklance.format.{InvalidOptionException, TagAlreadyExistsException, TagNotFoundException, UnsupportedFeatureException}
import sparklance.format.io.Storage

/**
 * The tags of a table, in pylance's layout: one JSON file per tag under `_refs/tags/` at the
 * table's root, camelCase keys (LANCE-MAINTENANCE.md §3.2). A tag protects its version from
 * cleanup and names it for time travel and restore. Tags of every branch are kept at the root;
 * `dataset` is the line (main or a branch) whose versions [[create]] and [[versionOf]] mean.
 */
final class Tags(dataset: Dataset) {
  private def dir = Storage.join(dataset.root.path, "_refs/tags")
  private def file(name: String) = Storage.join(dir, s"$name.json")

  /** Every tag, by name. */
  def list: Seq[Tag] =
    dataset.storage.list(dir).map(_.name).filter(_.endsWith(".json")).sorted.flatMap(n => read(n.stripSuffix(".json")))

  def get(name: String): Option[Tag] = read(name)

  /** The tag `name`, or a [[TagNotFoundException]] naming the tags there are. */
  def apply(name: String): Tag = get(name).getOrElse(throw new TagNotFoundException(dataset.path, name, list.map(_.name)))

  /** The version tag `name` names on this table's line; a tag of another line is refused, naming it. */
  def versionOf(name: String): Long = {
    val tag = apply(name)
    if (tag.branch != dataset.branch) throw new UnsupportedFeatureException(
      s"Tag '$name' of Lance table ${dataset.root.path} names version ${tag.version} of " +
        s"${tag.branch.fold("the main line")(b => s"branch '$b'")}, not of ${dataset.branch.fold("the main line")(b => s"branch '$b'")}")
    tag.version
  }

  /**
   * Tags `version` (which must exist) as `name`. The put is exclusive: of two racing creators of
   * one name, one gets [[TagAlreadyExistsException]].
   */
  def create(name: String, version: Long): Tag = {
    Tags.checkName(name)
    get(name).foreach(t => throw new TagAlreadyExistsException(dataset.path, name, t.version))
    val listing = dataset.listing()
    listing.snapshot(version) // fails for a version the table does not have
    val manifestSize = listing.manifestSize(version).get
    val now = Instant.now()
    val tag = Tag(name, version, dataset.branch, now, now, manifestSize, Map.empty)
    if (!dataset.storage.putIfAbsent(file(name), Tags.encode(tag)))
      throw new TagAlreadyExistsException(dataset.path, name, get(name).map(_.version).getOrElse(-1L))
    tag
  }

  /** Removes tag `name` (its version becomes subject to cleanup again); returns what it was. */
  def delete(name: String): Tag = {
    val tag = apply(name)
    dataset.storage.delete(file(name))
    tag
  }

  private def read(name: String): Option[Tag] = {
    val path = file(name)
    RefFile.read(dataset.storage, path).map(Tags.decode(path, name, _))
  }
}

object Tags {
  /** Lance's rules for tag names; a number would read as a version in `VERSION AS OF`. */
  def checkName(name: String): Unit = {
    def bad(why: String) = throw new InvalidOptionException("tag", s"'$name' is not a valid tag name: $why")
    if (name.isEmpty) bad("it is empty")
    name.find(c => !(c.isLetterOrDigit && c < 128 || c == '.' || c == '_' || c == '-'))
      .foreach(c => bad(s"'$c' is not a letter, digit, '.', '_' or '-'"))
    if (name.startsWith(".") || name.endsWith(".")) bad("it starts or ends with '.'")
    if (name.contains("..")) bad("it contains '..'")
    if (name.endsWith(".lock")) bad("it ends with '.lock'")
    if (name.forall(_.isDigit)) bad("a number names a version, not a tag")
  }

  def encode(tag: Tag): Array[Byte] = RefFile.encode(tag.metadata) { o =>
    tag.branch.fold(o.putNull("branch"))(o.put("branch", _))
    o.put("version", tag.version)
    o.put("createdAt", tag.createdAt.toString)
    o.put("updatedAt", tag.updatedAt.toString)
    o.put("manifestSize", tag.manifestSize)
  }

  def decode(path: String, name: String, bytes: Array[Byte]): Tag = {
    val f = RefFile.parse(path, "tag", bytes)
    import f.field
    def instant(names: String*) = field(names: _*).map(n => try Instant.parse(n.asText()) catch {
      case NonFatal(e) => throw f.corrupt(s"'${n.asText()}' is not a time", e)
    }).getOrElse(Instant.EPOCH)
    val version = f.long("version").getOrElse(throw f.corrupt("it has no version number"))
    val created = instant("createdAt", "created_at")
    Tag(name, version, field("branch").map(_.asText()), created, Some(instant("updatedAt", "updated_at")).filter(_ != Instant.EPOCH).getOrElse(created),
      f.long("manifestSize", "manifest_size").getOrElse(0L), f.metadata)
  }
}
