package sparklance.format.table

import java.time.Instant
import java.util.UUID
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.{BranchAlreadyExistsException, BranchNotFoundException, InvalidOptionException, LanceException,
  UnfinishedBranchException, VersionRemovedException}
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
   * has the same number), then the branch's file, which makes it a branch. Fails if the name is
   * taken, and takes the clone back if the branch file cannot be written: a version left in the
   * branch's directory would be the newest of the next branch of that name.
   */
  def create(name: String, source: Dataset, version: Long): Branch = {
    Branches.checkName(name)
    if (get(name).isDefined) throw new BranchAlreadyExistsException(root.path, name)
    val existing = list.map(_.name)
    existing.find(o => Branches.insideOwnDirectory(o, name) || Branches.insideOwnDirectory(name, o)).foreach { o =>
      val (outer, inner) = if (name.startsWith(o + "/")) (o, name) else (name, o)
      throw new InvalidOptionException("branch", s"'$name' is not a valid branch name for Lance table ${root.path}: the " +
        s"table of branch '$inner' would be inside Lance's directory '${inner.drop(outer.length + 1).takeWhile(_ != '/')}' " +
        s"of branch '$outer', whose cleanup and deletion would take it for files of its own")
    }
    val target = dataset(name)
    // No branch file, but versions: a creation that did not finish (pylance leaves them behind too) or one under way.
    if (target.listing().versions.nonEmpty) throw new UnfinishedBranchException(root.path, name, target.path)
    val listing = source.listing()
    val snapshot = listing.snapshot(version, forWrite = true)
    val written = ShallowClone.create(storage, snapshot, source.branch, target, Some(name))
      .getOrElse(throw new BranchAlreadyExistsException(root.path, name))
    def takeBack(): Unit = written.reverse.foreach(p => try storage.delete(p) catch { case NonFatal(_) => })
    val branch = try {
      val lineage = source.branch.map(b => apply(b).lineage).getOrElse(Nil) :+
        (version -> UUID.randomUUID().toString.replace("-", ""))
      Branch(name, source.branch, version, Instant.ofEpochSecond(Instant.now().getEpochSecond),
        listing.manifestSize(version).getOrElse(0L), lineage, Map.empty)
    } catch { case NonFatal(e) => takeBack(); throw e }
    val stored = try storage.putIfAbsent(file(name), Branches.encode(branch)) catch {
      // A write that failed may still have landed (an object store's timeout): then the branch is ours.
      case NonFatal(e) if !get(name).exists(_.lineage == branch.lineage) => takeBack(); throw e
      case NonFatal(_) => true
    }
    if (!stored) { takeBack(); throw new BranchAlreadyExistsException(root.path, name) }
    // As for a restore: a cleanup deletes old manifests before their files, then keeps the files of
    // versions branches were made from meanwhile. The version's manifest still there now means any
    // cleanup removing it sees this branch; gone means its files may go, so the branch is taken back.
    if (!storage.exists(Storage.join(source.path, s"_versions/${snapshot.naming.fileName(version)}"))) {
      storage.delete(file(name))
      takeBack()
      throw new VersionRemovedException(source.path, version, source.versions.headOption.getOrElse(version),
        s"; a cleanup removed it while branch '$name' was being made from it, so the branch was not made")
    }
    branch
  }

  /**
   * Deletes branch `name`: its file, then its table (and parent directories of a nested name that
   * no other branch uses), as pylance does. A branch other branches were made from is refused:
   * their versions name its files. Unlike pylance, no other branch's table is removed with it,
   * whether it lies inside this one's directory or this one inside its (a '/' in a name nests them).
   */
  def delete(name: String): Branch = {
    val branch = apply(name)
    val children = list.filter(_.parentBranch.contains(name)).map(_.name)
    if (children.nonEmpty) throw new LanceException(s"Branch '$name' of Lance table ${root.path} cannot be deleted: " +
      s"branch(es) ${children.map(c => s"'$c'").mkString(", ")} were made from it and use its files; delete them first")
    storage.delete(file(name))
    val others = list.map(_.name)
    val tables = others.map(Branches.location(root.path, _))
    val here = Branches.location(root.path, name)
    // Inside another branch's own directory ("x/data" in x's data/), only this table's directories are its own.
    if (others.exists(Branches.insideOwnDirectory(_, name))) Branches.OwnDirectories.foreach(d => deleteBut(Storage.join(here, d), tables))
    else deleteBut(here, tables)
    // "a/b/c" leaves "tree/a/b" and "tree/a" behind when they hold no other branch and are no part of one.
    name.split('/').inits.toSeq.drop(1).filter(_.nonEmpty).map(_.mkString("/"))
      .takeWhile(prefix => !others.exists(o => o == prefix || o.startsWith(prefix + "/") || Branches.insideOwnDirectory(o, prefix)))
      .foreach(prefix => try storage.deleteRecursively(Branches.location(root.path, prefix)) catch { case NonFatal(_) => })
    branch
  }

  /** Deletes directory `dir` with everything in it but the directories `keep` and what they hold. */
  private def deleteBut(dir: String, keep: Seq[String]): Unit =
    if (keep.contains(dir)) ()
    else if (!keep.exists(_.startsWith(dir + "/"))) storage.deleteRecursively(dir)
    else {
      storage.list(dir).foreach(e => storage.delete(Storage.join(dir, e.name)))
      storage.listDirectories(dir).foreach(d => deleteBut(Storage.join(dir, d), keep))
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
  val OwnDirectories: Seq[String] = Seq("_versions", "_transactions", "_deletions", "_indices", "data")

  /**
   * Whether branch `inner`'s table lies inside one of branch `outer`'s own directories ("x/data"
   * in x's `data/`, "x/_indices/u" in its `_indices/`), where x's cleanup and deletion would take it
   * for x's files.
   */
  def insideOwnDirectory(outer: String, inner: String): Boolean =
    inner.startsWith(outer + "/") && OwnDirectories.contains(inner.drop(outer.length + 1).takeWhile(_ != '/'))

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
