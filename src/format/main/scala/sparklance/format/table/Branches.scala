package sparklance.format.table

import java.time.Instant
import java.util.UUID
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.{BranchAlreadyExistsException, BranchNotFoundException, InvalidOptionException, LanceException}
import sparklance.format.io.Storage

/**
 * A branch of a table, as pylance keeps it in `_refs/branches/<name>.json` (a '/' in the name as
 * `%2F`): made from version `parentVersion` of `parentBranch` (None: the main line). `lineage` is
 * Lance's branch identifier, the (version, uuid) at which each branch of the chain was made.
 */
final case class Branch(name: String, parentBranch: Option[String], parentVersion: Long, createdAt: Instant,
    manifestSize: Long, lineage: Seq[(Long, String)], metadata: Map[String, String])

/**
 * The branches of a table, in pylance's layout (docs/format-branches.md): each is a table of its
 * own at `<root>/tree/<name>/`, a shallow clone of the version it was made from, whose files
 * stay where that version has them (see [[BasePaths]]); only files written on the branch are under
 * its directory. `table` is the main line or any branch of it: branches are kept at the root.
 */
final class Branches(table: Dataset) {
  private val root = table.root
  private def storage = root.storage
  private def dir = Storage.join(root.path, "_refs/branches")
  private def file(name: String) = Storage.join(dir, Branches.fileName(name))

  /** Every branch, by name. */
  def list: Seq[Branch] =
    storage.list(dir).map(_.name).filter(_.endsWith(".json")).map(Branches.nameOf).sorted.flatMap(read)

  def get(name: String): Option[Branch] = read(name)

  /** The branch `name`, or a [[BranchNotFoundException]] naming those there are. */
  def apply(name: String): Branch = get(name).getOrElse(throw new BranchNotFoundException(root.path, name, list.map(_.name)))

  /** The table of branch `name`, whether or not it exists. */
  def dataset(name: String): Dataset = new Dataset(storage, Branches.location(root.path, name), Some(name))

  /**
   * Makes branch `name` from `version` of `source` (this table's main line or one of its branches),
   * as pylance does: first the branch's table, a shallow clone of that version (its first version
   * has the same number), then the branch's file. Fails if the name is taken.
   */
  def create(name: String, source: Dataset, version: Long): Branch = {
    Branches.checkName(name)
    if (get(name).isDefined) throw new BranchAlreadyExistsException(root.path, name)
    val listing = source.listing()
    val snapshot = listing.snapshot(version, forWrite = true)
    val target = dataset(name)
    if (!ShallowClone.create(storage, snapshot, source.branch, target, Some(name)))
      throw new BranchAlreadyExistsException(root.path, name)
    val lineage = source.branch.map(b => apply(b).lineage).getOrElse(Nil) :+
      (version -> UUID.randomUUID().toString.replace("-", ""))
    val branch = Branch(name, source.branch, version, Instant.ofEpochSecond(Instant.now().getEpochSecond),
      listing.manifestSize(version).getOrElse(0L), lineage, Map.empty)
    if (!storage.putIfAbsent(file(name), Branches.encode(branch))) throw new BranchAlreadyExistsException(root.path, name)
    branch
  }

  /**
   * Deletes branch `name`: its file, then its directory (and parent directories of a nested name
   * that no other branch uses), as pylance does. A branch other branches were made from is refused:
   * their versions name its files.
   */
  def delete(name: String): Branch = {
    val branch = apply(name)
    val children = list.filter(_.parentBranch.contains(name)).map(_.name)
    if (children.nonEmpty) throw new LanceException(s"Branch '$name' of Lance table ${root.path} cannot be deleted: " +
      s"branch(es) ${children.map(c => s"'$c'").mkString(", ")} were made from it and use its files; delete them first")
    storage.delete(file(name))
    val others = list.map(_.name)
    // A branch "a/b" has its table inside "a"'s directory: then only "a"'s own files go.
    val here = Branches.location(root.path, name)
    if (others.exists(_.startsWith(name + "/"))) Branches.OwnDirectories.foreach(d => storage.deleteRecursively(Storage.join(here, d)))
    else storage.deleteRecursively(here)
    // "a/b/c" leaves "tree/a/b" and "tree/a" behind when no other branch is below them.
    name.split('/').inits.toSeq.drop(1).filter(_.nonEmpty).map(_.mkString("/"))
      .takeWhile(prefix => !others.exists(o => o == prefix || o.startsWith(prefix + "/")))
      .foreach(prefix => try storage.deleteRecursively(Branches.location(root.path, prefix)) catch { case NonFatal(_) => })
    branch
  }

  private def read(name: String): Option[Branch] = {
    val path = file(name)
    RefFile.read(storage, path).map(Branches.decode(path, name, _))
  }
}

object Branches {
  /** The directory under a table's root that holds its branches' tables. */
  val TreeDir = "tree"

  /** What a branch's table holds of its own (Lance's directories). */
  private val OwnDirectories = Seq("_versions", "_transactions", "_deletions", "_indices", "data")

  def location(rootPath: String, name: String): String = Storage.join(Storage.join(rootPath, TreeDir), name)

  /** The main line's path, from the path of branch `name`'s table. */
  def rootOf(path: String, name: String): String = {
    val suffix = s"/$TreeDir/$name"
    if (!path.stripSuffix("/").endsWith(suffix)) throw new LanceException(s"$path is not the table of a branch '$name'")
    path.stripSuffix("/").dropRight(suffix.length)
  }

  /** The file name of a branch: a '/' of a nested name is `%2F`, so that the file stays in `_refs/branches`. */
  def fileName(name: String): String = name.replace("/", "%2F") + ".json"
  private def nameOf(file: String): String = file.stripSuffix(".json").replace("%2F", "/").replace("%2f", "/")

  /** Lance's rules for branch names: '/'-separated segments of letters, digits, '.', '-', '_'; not "main". */
  def checkName(name: String): Unit = {
    def bad(why: String) = throw new InvalidOptionException("branch", s"'$name' is not a valid branch name: $why")
    if (name.isEmpty) bad("it is empty")
    if (name.startsWith("/") || name.endsWith("/")) bad("it starts or ends with '/'")
    if (name.contains("..")) bad("it contains '..'")
    name.split('/').foreach { segment =>
      if (segment.isEmpty) bad("it has an empty segment between '/'")
      segment.find(c => !(c.isLetterOrDigit && c < 128 || c == '.' || c == '_' || c == '-'))
        .foreach(c => bad(s"'$c' is not a letter, digit, '.', '_', '-' or '/'"))
    }
    if (name.endsWith(".lock")) bad("it ends with '.lock'")
    if (name == "main") bad("'main' names the main line")
  }

  def encode(b: Branch): Array[Byte] = RefFile.encode(b.metadata) { o =>
    b.parentBranch.fold(o.putNull("parentBranch"))(o.put("parentBranch", _))
    val mapping = o.putObject("identifier").putArray("version_mapping")
    b.lineage.foreach { case (v, id) => mapping.addArray().add(v).add(id) }
    o.put("parentVersion", b.parentVersion)
    o.put("createAt", b.createdAt.getEpochSecond)
    o.put("manifestSize", b.manifestSize)
  }

  def decode(path: String, name: String, bytes: Array[Byte]): Branch = {
    val f = RefFile.parse(path, "branch", bytes)
    val version = f.long("parentVersion", "parent_version").getOrElse(throw f.corrupt("it has no parent version"))
    val lineage = f.field("identifier").flatMap(i => Option(i.get("version_mapping"))).toSeq
      .flatMap(_.elements().asScala).map(e => e.get(0).asLong() -> e.get(1).asText())
    Branch(name, f.field("parentBranch", "parent_branch").map(_.asText()), version,
      Instant.ofEpochSecond(f.long("createAt", "create_at").getOrElse(0L)),
      f.long("manifestSize", "manifest_size").getOrElse(0L), lineage, f.metadata)
  }
}
