package sparklance.format.table

import java.nio.file.{Files, Paths}
import java.time.{Duration, Instant}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{BranchNotFoundException, InvalidOptionException, LanceException, VersionRemovedException}
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.io.{ForwardingStorage, LocalStorage, Storage}
import sparklance.format.maintenance.{Cleanup, CleanupPolicy}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/** Creating and deleting branches never leaves a half-made branch nor removes another line's files. */
class BranchesSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** A table at v2 with one data file, and its branches. */
  private def table(): (Dataset, Branches) = {
    val root = Files.createTempDirectory("branches").resolve("t.lance")
    val ds = new Dataset(LocalStorage, root.toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    append(ds, "f1.lance")
    (ds, new Branches(ds))
  }

  /** Commits one fragment of a (never decoded) data file `file` written under `ds`'s data/. */
  private def append(ds: Dataset, file: String): Unit = {
    Files.createDirectories(Paths.get(ds.path).resolve("data"))
    Files.write(Paths.get(ds.path).resolve(s"data/$file"), Array[Byte](1))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(DataFragment.newBuilder().setPhysicalRows(1)
      .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build())))
  }

  /** Branch `name` made as pylance would (pylance has no rule against the names sparklance refuses). */
  private def pylanceBranch(branches: Branches, root: Dataset, name: String, source: Dataset, version: Long): Unit = {
    val target = branches.dataset(name)
    assert(ShallowClone.create(LocalStorage, source.listing().snapshot(version), source.branch, target, Some(name)).isDefined)
    val b = Branch(name, source.branch, version, java.time.Instant.now(), 0, Seq(version -> "ab"), Map.empty)
    LocalStorage.putIfAbsent(Storage.join(root.path, s"_refs/branches/${Branches.fileName(name)}"), Branches.encode(b))
  }

  /** Replaces the whole table with one fragment of `file`. */
  private def overwrite(ds: Dataset, file: String): Unit = {
    Files.write(Paths.get(ds.path).resolve(s"data/$file"), Array[Byte](1))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Seq(DataFragment.newBuilder().setPhysicalRows(1)
      .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build()), schema))
  }

  /** Local storage running `before` (once) ahead of the first delete or put of a path it accepts. */
  private final class HookedStorage(when: String => Boolean, before: () => Unit) extends ForwardingStorage {
    private var armed = true
    private def hook(path: String): Unit = if (armed && when(path)) { armed = false; before() }
    override def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = { hook(path); super.putIfAbsent(path, bytes) }
    override def delete(path: String): Unit = { hook(path); super.delete(path) }
  }

  private val cleanAll = CleanupPolicy(olderThan = Some(Duration.ZERO))
  private def later = Instant.now().plusSeconds(3600)

  private def exists(ds: Dataset, relative: String): Boolean = Files.exists(Paths.get(ds.path).resolve(relative))

  test("a creation that fails after its clone leaves no version behind; a leftover table is refused by name, not joined") {
    val (ds, branches) = table()
    branches.create("g", ds, 2)
    LocalStorage.delete(Storage.join(ds.path, "_refs/branches/g.json")) // g's table without its file: an unfinished creation
    val ghost = branches.dataset("g")
    // h's lineage needs g's branch file, which is gone: the creation fails after h's clone was written.
    intercept[BranchNotFoundException](branches.create("h", ghost, 2))
    assert(branches.dataset("h").listing().versions.isEmpty && branches.get("h").isEmpty)
    branches.create("h", ds, 1)
    assert(branches.dataset("h").versions == Seq(1L) && branches("h").parentVersion == 1)
    // Another version on g's leftover table would make the branch's newest version one it was not made from.
    val e = intercept[LanceException](branches.create("g", ds, 1))
    assert(e.getMessage.contains("tree/g") && e.getMessage.contains("unfinished"), e.getMessage)
    assert(ghost.versions == Seq(2L))
  }

  test("names that put a branch's table inside another branch's Lance directories are refused by name") {
    val (ds, branches) = table()
    branches.create("x", ds, 2)
    for (bad <- Seq("x/data", "x/_versions/a", "x/_indices", "x/_deletions", "x/_transactions"))
      assert(intercept[InvalidOptionException](branches.create(bad, ds, 2)).getMessage.contains("'x'"))
    branches.create("x/y", ds, 2)
    branches.create("data", ds, 2) // only inside another branch's table is a Lance directory name a problem
    val (ds2, other) = table()
    other.create("y/data", ds2, 2)
    assert(intercept[InvalidOptionException](other.create("y", ds2, 2)).getMessage.contains("'y/data'"))
  }

  test("deleting a branch never removes files of a branch whose table is inside its directories, nor of the one it is inside") {
    val (ds, branches) = table()
    branches.create("x", ds, 2)
    val x = branches.dataset("x")
    append(x, "x1.lance") // x's v3: tree/x/data/x1.lance
    pylanceBranch(branches, ds, "x/data", ds, 2)  // a table at tree/x/data, inside x's data/
    pylanceBranch(branches, ds, "x/_indices/u", ds, 2)
    pylanceBranch(branches, ds, "x/_indices", ds, 1) // its own _versions/ directly in x's _indices/
    branches.delete("x/data")
    assert(exists(x, "data/x1.lance") && x.snapshot().version == 3)
    append(branches.dataset("x/_indices/u"), "u1.lance")
    // vacuum of x must not take the table in its _indices/ for index directories.
    new Cleanup(x).run(CleanupPolicy(olderThan = Some(java.time.Duration.ZERO), deleteUnverified = true),
      now = java.time.Instant.now().plusSeconds(3600))
    assert(branches.dataset("x/_indices/u").versions == Seq(2L, 3L) && exists(branches.dataset("x/_indices/u"), "data/u1.lance"))
    assert(branches.dataset("x/_indices").versions == Seq(1L))
    branches.delete("x")
    assert(branches.dataset("x/_indices/u").versions == Seq(2L, 3L) && exists(branches.dataset("x/_indices/u"), "data/u1.lance"))
    assert(!exists(x, "_versions") && !exists(x, "data"))
    pylanceBranch(branches, ds, "x", ds, 2)
    pylanceBranch(branches, ds, "x/data/z", ds, 2)
    append(branches.dataset("x"), "x2.lance")
    branches.delete("x/data/z") // tree/x/data is x's, not a parent directory of z's to remove
    assert(exists(branches.dataset("x"), "data/x2.lance"))
  }

  test("a branch made while a cleanup removes its version keeps that version and its files, then and later") {
    val (ds, branches) = table() // v2: f1
    append(ds, "f2.lance")       // v3
    overwrite(ds, "o.lance")     // v4: no earlier file stays referenced on main
    // The branch is made after the cleanup planned, before it deletes the first old manifest.
    val hooked = new HookedStorage(_.endsWith(".manifest"), () => branches.create("b", ds, 2))
    new Cleanup(new Dataset(hooked, ds.path)).run(cleanAll, now = later)
    assert(branches.get("b").isDefined && ds.versions == Seq(2L, 4L) && exists(ds, "data/f1.lance") && !exists(ds, "data/f2.lance"))
    new Cleanup(ds).run(cleanAll, now = later.plus(Duration.ofDays(8)))
    assert(ds.versions == Seq(2L, 4L) && exists(ds, "data/f1.lance"))
    assert(branches.dataset("b").snapshot().fragments.map(_.getFiles(0).getPath) == Seq("f1.lance"))
  }

  test("a branch whose version a cleanup removed while it was being made is taken back, named") {
    val (ds, _) = table()
    append(ds, "f2.lance")
    overwrite(ds, "o.lance")
    // The cleanup runs after the branch's clone, before its branch file: it sees no branch.
    val hooked = new HookedStorage(_.endsWith("_refs/branches/b.json"), () => new Cleanup(ds).run(cleanAll, now = later))
    val branches = new Branches(new Dataset(hooked, ds.path))
    val e = intercept[VersionRemovedException](branches.create("b", new Dataset(hooked, ds.path), 2))
    assert(e.getMessage.contains("branch 'b'"), e.getMessage)
    assert(branches.get("b").isEmpty && branches.dataset("b").versions.isEmpty && ds.versions == Seq(4L))
  }
}
