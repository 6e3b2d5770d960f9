package sparklance.format.commit

import java.nio.file.{Files, Path, Paths, StandardCopyOption}
import java.nio.file.attribute.FileTime
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Using
import sparklance.format.io.{ForwardingStorage, LocalStorage}
import sparklance.format.table.{Dataset, LanceSchema}

/**
 * The check after a put that landed, where a newer version carries the same time as ours (a store
 * that keeps whole seconds, or a local file system's clock tick under racing writers): the first
 * newer version decides whether it was built on ours.
 */
class OrphanCheckSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(java.util.List.of(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null))))

  /** A table of one fragment holding ids 0 until 100 (version 2: the first is the empty table). */
  private def table(dir: Path): Dataset = {
    val ds = new Dataset(LocalStorage, dir.resolve("t.lance").toString)
    ds.create(schema)
    Using.resource(new RootAllocator()) { allocator =>
      val read = ds.snapshot()
      Using.resources(ds.newWriter(read, allocator), new BigIntVector("id", allocator)) { (writer, ids) =>
        (0 until 100).foreach(i => ids.setSafe(i, i.toLong)); ids.setValueCount(100)
        writer.write(Seq(ids))
        new Committer(ds).commit(Some(read), Operation.Append(writer.finish()))
      }
    }
    ds
  }

  /** Deletes the rows at `offsets` of fragment 0, on the latest version. */
  private def delete(ds: Dataset, offsets: Int*): Long = {
    val read = ds.snapshot()
    val fragment = read.fragments.head.getId
    offsets.foldLeft(new RowLevelCommit(ds, read))((c, o) => c.delete((fragment << 32) | o.toLong))
      .commit(RowLevelCommit.Kind.Delete).get.version
  }

  private def manifestPath(ds: Dataset, version: Long): Path = Paths.get(ds.path, "_versions", ds.naming.fileName(version))

  private def sameTime(ds: Dataset, versions: Long*): Unit = {
    val time = FileTime.fromMillis(System.currentTimeMillis() / 1000 * 1000)
    versions.foreach(v => Files.setLastModifiedTime(manifestPath(ds, v), time))
  }

  test("a racing delete of the same fragment, of the same time, built on ours: our version is live") {
    val ds = table(Files.createTempDirectory("orphan-live"))
    assert(delete(ds, 1, 2) == 3)
    assert(delete(ds, 3) == 4) // built on version 3: its deletion file holds rows 1, 2 and 3
    sameTime(ds, 3, 4)
    val ours = ds.snapshot(Some(3L)).manifest
    assert(OrphanCheck.verdict(ds, ds.naming, 3, ours, Some(ds.snapshot(Some(2L)).manifest)) == OrphanCheck.Live)
    // The newest version is told apart: the work after a commit then needs no listing of its own.
    assert(OrphanCheck.verdict(ds, ds.naming, 4, ds.snapshot(Some(4L)).manifest, Some(ours)) == OrphanCheck.Newest)
  }

  test("a commit that finds no newer version after its put says its version is the newest; one another writer committed on top of before the check is not told so") {
    val ds = table(Files.createTempDirectory("orphan-newest"))
    val read = ds.snapshot()
    val fragment = read.fragments.head.getId
    val first = new RowLevelCommit(ds, read).delete(fragment << 32).commit(RowLevelCommit.Kind.Delete).get
    assert(first.commit.newest)
    // Another writer commits on top of ours between our put and the check after it: ours is
    // live, but not the newest.
    var raced = false
    val racing = new ForwardingStorage() {
      override def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = {
        val put = super.putIfAbsent(path, bytes)
        if (put && !raced) { raced = true; OrphanCheckSuite.this.delete(ds, 7) }
        put
      }
    }
    val latest = ds.snapshot()
    val second = new RowLevelCommit(new Dataset(racing, ds.path), latest).delete((fragment << 32) | 1)
      .commit(RowLevelCommit.Kind.Delete).get
    assert(raced && second.version == first.version + 1 && ds.latestVersion == second.version + 1)
    assert(!second.commit.newest)
  }

  test("a manifest put into a hole below versions not built on it is not taken for live") {
    val root = Files.createTempDirectory("orphan-hole")
    val theirs = table(root.resolve("a"))
    val mine = table(root.resolve("b"))
    // Both tables hold the same version 2 (same fragment id and offsets); only the files differ.
    assert(delete(theirs, 5) == 3 && delete(theirs, 6) == 4)
    assert(delete(mine, 1, 2) == 3)
    val ours = mine.snapshot(Some(3L)).manifest
    // Version 3 of theirs removed (as a cleanup keeping the newest would) and ours put in its place.
    Files.delete(manifestPath(theirs, 3))
    Files.copy(manifestPath(mine, 3), manifestPath(theirs, 3))
    Using.resource(Files.list(Paths.get(mine.path, "_deletions"))) { files =>
      files.forEach(f => Files.copy(f, Paths.get(theirs.path, "_deletions", f.getFileName.toString), StandardCopyOption.REPLACE_EXISTING))
    }
    sameTime(theirs, 3, 4)
    val base = theirs.snapshot(Some(2L)).manifest
    assert(OrphanCheck.verdict(theirs, theirs.naming, 3, ours, Some(base)) == OrphanCheck.Undecided)
    // Told apart by time, it is an orphan.
    Files.setLastModifiedTime(manifestPath(theirs, 4), FileTime.fromMillis(Files.getLastModifiedTime(manifestPath(theirs, 3)).toMillis - 5000))
    assert(OrphanCheck.verdict(theirs, theirs.naming, 3, ours, Some(base)) == OrphanCheck.Orphan)
  }
}
