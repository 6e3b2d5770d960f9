package sparklance.format.maintenance

import com.google.protobuf.ByteString
import java.nio.ByteBuffer
import java.nio.file.{Files, Path, Paths}
import java.nio.file.attribute.FileTime
import java.time.{Duration, Instant}
import java.util.UUID
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, InvalidOptionException, LanceException, UnsupportedFeatureException}
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.index.Indices
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment, IndexMetadata}
import sparklance.format.table.{Branches, Dataset, LanceSchema, ManifestFile, Tags}

/** Cleanup as pylance's `cleanup_old_versions` decides it, on tables whose file times we set. */
class CleanupSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** A table whose versions 2.. each append one fragment with one (empty, never decoded) data file. */
  private final class Table(appends: Int) {
    val root: Path = Files.createTempDirectory("cleanup").resolve("t.lance")
    val ds = new Dataset(LocalStorage, root.toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    (1 to appends).foreach(i => append(s"f$i.lance"))

    def append(file: String): Unit = {
      Files.createDirectories(root.resolve("data"))
      Files.write(root.resolve(s"data/$file"), Array[Byte](1, 2, 3))
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(DataFragment.newBuilder().setPhysicalRows(1)
        .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build())))
    }

    /** Replaces the whole table with one fragment of `file` (an Overwrite: no earlier file stays referenced). */
    def overwrite(file: String): Unit = {
      Files.write(root.resolve(s"data/$file"), Array[Byte](1))
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Seq(DataFragment.newBuilder().setPhysicalRows(1)
        .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build()), schema))
    }

    def files(dir: String): Set[String] =
      if (!Files.isDirectory(root.resolve(dir))) Set.empty
      else Files.list(root.resolve(dir)).iterator().asScala.map(_.getFileName.toString).toSet

    def touch(relative: String, age: Duration, bytes: Array[Byte] = Array[Byte](0)): Unit = {
      val p = root.resolve(relative)
      Files.createDirectories(p.getParent)
      if (!Files.exists(p)) Files.write(p, bytes)
      Files.setLastModifiedTime(p, FileTime.from(Instant.now().minus(age)))
    }
  }

  private val later = Instant.now().plus(Duration.ofDays(1))
  private def olderThan(d: Duration) = CleanupPolicy(olderThan = Some(d))

  test("old versions go with the files only they name; the newest stays even when old; shared files stay") {
    val t = new Table(3) // v1 create, v2..v4 append f1..f3: every version names the files of those before
    t.overwrite("g.lance") // v5 names only g
    val result = new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later)
    assert(result.removedVersions == Seq(1L, 2L, 3L, 4L) && result.oldestVersion == 5 && result.readVersion == 5)
    assert(t.ds.versions == Seq(5L))
    assert(t.files("data") == Set("g.lance"))
    assert(t.files("_transactions") == Set(t.ds.snapshot().manifest.getTransactionFile))
    assert(result.count(CleanupFileKind.Data) == 3 && result.count(CleanupFileKind.Manifest) == 4 &&
      result.count(CleanupFileKind.Transaction) == 4)
    assert(result.files.filter(_.kind == CleanupFileKind.Data).forall(!_.unverified))
    // Nothing left to do, and cleaning again is harmless.
    val again = new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later)
    assert(again.files.isEmpty && again.removedVersions.isEmpty)

    val fresh = new Table(2)
    // pylance's default of 14 days keeps versions committed a moment ago; a policy without filters selects all.
    val default = olderThan(CleanupPolicy.DefaultOlderThan)
    assert(new Cleanup(fresh.ds).run(default).removedVersions.isEmpty)
    assert(new Cleanup(fresh.ds).plan(CleanupPolicy()).removedVersions == Seq(1L, 2L))
    assert(new Cleanup(fresh.ds).run(default, now = Instant.now().plus(Duration.ofDays(15))).removedVersions == Seq(1L, 2L))
  }

  test("retain_versions and older_than must both select a version; retain keeps the newest n") {
    val t = new Table(5) // versions 1..6
    assert(new Cleanup(t.ds).plan(CleanupPolicy(retainVersions = Some(2)), later).removedVersions == Seq(1L, 2L, 3L, 4L))
    assert(new Cleanup(t.ds).plan(CleanupPolicy(retainVersions = Some(10)), later).removedVersions.isEmpty)
    assert(new Cleanup(t.ds).plan(CleanupPolicy(olderThan = Some(Duration.ofDays(30)), retainVersions = Some(2)), later)
      .removedVersions.isEmpty)
    intercept[InvalidOptionException](CleanupPolicy(retainVersions = Some(0)))
    val dry = new Cleanup(t.ds).run(CleanupPolicy(retainVersions = Some(3)), dryRun = true, now = later)
    assert(dry.dryRun && dry.removedVersions == Seq(1L, 2L, 3L) && t.ds.versions == (1L to 6L))
    val wet = new Cleanup(t.ds).run(CleanupPolicy(retainVersions = Some(3)), now = later)
    assert(wet.files.map(_.path).toSet == dry.files.map(_.path).toSet && t.ds.versions == Seq(4L, 5L, 6L))
  }

  test("tagged versions stay; with error_if_tagged_old_versions the cleanup fails and deletes nothing") {
    val t = new Table(1)
    t.overwrite("a.lance") // v3
    t.overwrite("b.lance") // v4
    t.overwrite("c.lance") // v5
    new Tags(t.ds).create("keep", 3)
    val before = (t.files("data"), t.files("_versions"), t.files("_transactions"))
    // A dry run does not fail: it lists what would go with the tagged version kept, and the tag in the way.
    val dry = new Cleanup(t.ds).run(olderThan(Duration.ZERO), dryRun = true, now = later)
    assert(dry.tagsInTheWay == Seq("keep (version 3)") && dry.removedVersions == Seq(1L, 2L, 4L))
    val refused = intercept[LanceException](new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later))
    assert(refused.getMessage.contains("keep (version 3)"), refused.getMessage)
    assert((t.files("data"), t.files("_versions"), t.files("_transactions")) == before)
    val result = new Cleanup(t.ds).run(olderThan(Duration.ZERO).copy(errorIfTaggedOldVersions = false), now = later)
    assert(result.removedVersions == Seq(1L, 2L, 4L) && t.ds.versions == Seq(3L, 5L))
    assert(result.files.map(_.path).toSet == dry.files.map(_.path).toSet)
    // Version 4 is newer than the oldest kept one (3): the listing is not cut at 3's time, so b goes.
    assert(t.files("data") == Set("a.lance", "c.lance"))
    assert(t.ds.snapshot(Some(3)).fragments.size == 1)
  }

  test("orphans: files no manifest names go after 7 days (or with delete_unverified); other names are never touched") {
    val t = new Table(1)
    val latestTxn = t.ds.snapshot().manifest.getTransactionFile
    t.touch("data/old-orphan.lance", Duration.ofDays(8))
    t.touch("data/young-orphan.lance", Duration.ofDays(6))
    t.touch("data/junk.txt", Duration.ofDays(30))
    t.touch("_deletions/0-1-99.arrow", Duration.ofDays(8))
    t.touch("_transactions/0-old.txn", Duration.ofDays(8))
    t.touch("_versions/.tmp-dead.partial", Duration.ofDays(8))
    t.touch("_versions/notes.md", Duration.ofDays(8))
    t.touch(s"_indices/${UUID.randomUUID()}/index.idx", Duration.ofDays(8))
    t.touch("data/old-orphan/00000001.blob", Duration.ofDays(8))
    val r = new Cleanup(t.ds).run(olderThan(Duration.ofDays(30)))
    assert(r.removedVersions.isEmpty)
    assert(r.files.map(_.path).toSet == Set("data/old-orphan.lance", "_deletions/0-1-99.arrow", "_transactions/0-old.txn",
      "_versions/.tmp-dead.partial", "data/old-orphan/00000001.blob") ++ r.files.filter(_.kind == CleanupFileKind.Index).map(_.path))
    assert(r.count(CleanupFileKind.Index) == 1 && r.files.forall(_.unverified))
    assert(t.files("_indices").isEmpty, "an index directory whose files all went goes too")
    assert(t.files("data") == Set("f1.lance", "young-orphan.lance", "junk.txt", "old-orphan"))
    assert(t.files("_versions").contains("notes.md"))

    // A young orphan written after the newest manifest (a commit in flight) is not even listed
    // in _transactions and _deletions, whatever the policy; in data/ delete_unverified takes it.
    t.touch(s"_transactions/1-inflight.txn", Duration.ZERO)
    t.touch(s"_deletions/0-2-7.arrow", Duration.ZERO)
    val eager = new Cleanup(t.ds).run(CleanupPolicy(olderThan = Some(Duration.ofDays(30)), deleteUnverified = true))
    assert(eager.files.map(_.path).toSet == Set("data/young-orphan.lance"))
    assert(t.files("_transactions") == Set(latestTxn, "1-inflight.txn", t.ds.snapshot(Some(1)).manifest.getTransactionFile))
  }

  test("index directories live while a kept manifest names their uuid") {
    val t = new Table(1)
    val kept = UUID.randomUUID()
    val dropped = UUID.randomUUID()
    def withIndex(version: Long, uuid: UUID): Unit = {
      val name = t.ds.snapshot(Some(version)).naming.fileName(version)
      val file = t.root.resolve(s"_versions/$name")
      val bytes = Files.readAllBytes(file)
      val decoded = ManifestFile.decode(file.toString, bytes)
      val raw = ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits).putLong(uuid.getLeastSignificantBits).array()
      val index = IndexMetadata.newBuilder().setName(s"idx-$version").addFields(0)
        .setUuid(sparklance.format.proto.TableProtos.UUID.newBuilder().setUuid(ByteString.copyFrom(raw))).build()
      Files.write(file, ManifestFile.encode(decoded.manifest, Some(Indices.encode(Seq(index))),
        ManifestFile.inlineTransaction(file.toString, bytes)))
      t.touch(s"_indices/$uuid/page_data.lance", Duration.ofDays(1))
      t.touch(s"_indices/$uuid/page_lookup.lance", Duration.ofDays(1))
    }
    withIndex(1, dropped)
    t.overwrite("x.lance") // v3
    withIndex(3, kept)
    val r = new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later)
    assert(r.count(CleanupFileKind.Index) == 2 && r.files.filter(_.kind == CleanupFileKind.Index).forall(!_.unverified))
    assert(t.files("_indices") == Set(kept.toString))
  }

  test("a manifest with an unknown feature flag stops the cleanup before it deletes anything") {
    val t = new Table(2)
    val v1 = t.root.resolve(s"_versions/${t.ds.snapshot(Some(1)).naming.fileName(1)}")
    val bytes = Files.readAllBytes(v1)
    val decoded = ManifestFile.decode(v1.toString, bytes)
    Files.write(v1, ManifestFile.encode(decoded.manifest.toBuilder.setWriterFeatureFlags(64).build(), None,
      ManifestFile.inlineTransaction(v1.toString, bytes)))
    val before = t.files("_versions")
    intercept[UnsupportedFeatureException](new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later))
    assert(t.files("_versions") == before)
  }

  test("branches: each line is cleaned on its own; versions a branch was made from stay, and files of other bases are never touched") {
    val t = new Table(3) // v1..v4: f1..f3
    val branches = new Branches(t.ds)
    branches.create("dev", t.ds, 2)         // dev's first version is v2, naming f1 in the root
    val dev = branches.dataset("dev")
    Files.createDirectories(Paths.get(dev.path).resolve("data"))
    Files.write(Paths.get(dev.path).resolve("data/d1.lance"), Array[Byte](1))
    new Committer(dev).commit(Some(dev.snapshot()), Operation.Append(Seq(DataFragment.newBuilder().setPhysicalRows(1)
      .addFiles(DataFile.newBuilder().setPath("d1.lance").addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build())))
    branches.create("dev/x", dev, 3)         // made from dev's v3: names f1 (root) and d1 (dev)
    t.overwrite("o.lance")                   // v5: no root file of v1..v4 stays referenced on main
    val main = new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later)
    assert(main.removedVersions == Seq(1L, 3L, 4L), "v2 stays: dev was made from it")
    assert(t.files("data") == Set("f1.lance", "o.lance"), "f1 stays with v2; f2, f3 go")
    // dev: its v2 (the clone) goes, v3 stays (dev/x was made from it); nothing of the root is examined.
    new Committer(dev).commit(Some(dev.snapshot()), Operation.Delete(Nil, Seq(1L), "true"))
    val onDev = new Cleanup(dev).run(olderThan(Duration.ZERO), now = later)
    assert(onDev.removedVersions == Seq(2L) && onDev.files.forall(f => !f.path.startsWith("data/")))
    assert(Files.exists(Paths.get(dev.path).resolve("data/d1.lance")) && t.files("data").contains("f1.lance"))
    // Deleting dev/x frees dev's v3 (the newest stays, so only the clone version went before).
    intercept[LanceException](branches.delete("dev"))
    branches.delete("dev/x")
    assert(!Files.exists(t.root.resolve("tree/dev/x")) && Files.exists(t.root.resolve("tree/dev/_versions")))
    assert(new Cleanup(dev).run(olderThan(Duration.ZERO), now = later).removedVersions == Seq(3L))
    branches.delete("dev")
    assert(!Files.exists(t.root.resolve("tree")) || t.files("tree").isEmpty)
    assert(new Cleanup(t.ds).run(olderThan(Duration.ZERO), now = later).removedVersions == Seq(2L))
    assert(t.files("data") == Set("o.lance"))
  }

  test("a writer whose base version a cleanup removed fails with a conflict instead of reviving that version") {
    val t = new Table(1)          // v2
    val stale = t.ds.snapshot()   // a writer reads v2 ...
    t.append("f2.lance")          // v3, v4 by others
    t.append("f3.lance")
    new Cleanup(t.ds).run(CleanupPolicy(retainVersions = Some(1)), now = later) // removes v1..v3
    assert(t.ds.versions == Seq(4L))
    Files.write(t.root.resolve("data/late.lance"), Array[Byte](1))
    val e = intercept[CommitConflictException](new Committer(t.ds).commit(Some(stale), Operation.Append(Seq(
      DataFragment.newBuilder().setPhysicalRows(1).addFiles(DataFile.newBuilder().setPath("late.lance")).build()))))
    assert(e.getMessage.contains("cleanup"), e.getMessage)
    assert(t.ds.versions == Seq(4L), "no version 3 came back")
  }

  test("durations as Spark intervals and as Lance's humantime config values") {
    assert(Durations.parse("o", "7 days") == Duration.ofDays(7))
    assert(Durations.parse("o", "1 day 12 hours") == Duration.ofHours(36))
    assert(Durations.parse("o", "3600s") == Duration.ofHours(1))
    assert(Durations.parse("o", "1h 30m") == Duration.ofMinutes(90))
    assert(Durations.parse("o", "INTERVAL '2' weeks") == Duration.ofDays(14))
    assert(Durations.parse("o", "0 seconds") == Duration.ZERO)
    assert(Durations.parse("o", "1.5 seconds") == Duration.ofMillis(1500))
    for (bad <- Seq("", "7", "seven days", "7 fortnights", "-1 days", "7 days ago"))
      assert(intercept[InvalidOptionException](Durations.parse("older_than", bad)).getMessage.contains("older_than"), bad)
  }

  test("tags: pylance's JSON layout both ways, Lance's name rules, no silent moves") {
    val t = new Table(2)
    val tags = new Tags(t.ds)
    val tag = tags.create("release-1.0", 2)
    val json = new String(Files.readAllBytes(t.root.resolve("_refs/tags/release-1.0.json")), "UTF-8")
    for (key <- Seq("\"version\" : 2", "\"branch\" : null", "\"createdAt\"", "\"updatedAt\"", "\"manifestSize\"", "\"metadata\""))
      assert(json.contains(key), json)
    assert(tag.manifestSize == Files.size(t.root.resolve(s"_versions/${t.ds.snapshot(Some(2)).naming.fileName(2)}")))
    assert(tags.list.map(t => t.name -> t.version) == Seq("release-1.0" -> 2L))
    intercept[sparklance.format.TagAlreadyExistsException](tags.create("release-1.0", 3))
    for (bad <- Seq("", "a/b", ".hidden", "end.", "a..b", "x.lock", "42", "sp ace"))
      intercept[InvalidOptionException](tags.create(bad, 2))
    intercept[sparklance.format.VersionNotFoundException](tags.create("nope", 9))
    // pylance 14 writes camelCase with nanosecond times; older Lance snake_case.
    Files.write(t.root.resolve("_refs/tags/py.json"),
      """{"branch": null, "version": 1, "createdAt": "2026-11-21T04:39:13.429747890Z",
        | "updatedAt": "2026-11-21T04:39:13.429747890Z", "manifestSize": 1166, "metadata": {"k": "v"}}""".stripMargin.getBytes)
    val py = tags("py")
    assert(py.version == 1 && py.createdAt == Instant.parse("2026-11-21T04:39:13.429747890Z") && py.metadata == Map("k" -> "v"))
    assert(intercept[sparklance.format.TagNotFoundException](tags("missing")).getMessage.contains("'py', 'release-1.0'"))
    assert(tags.delete("release-1.0").version == 2 && tags.list.map(_.name) == Seq("py"))
  }

  test("Lance's automatic cleanup: due every interval-th version, with the config's filters, keeping the version read") {
    def config(kv: (String, String)*) = kv.toMap
    assert(CleanupPolicy.automatic(config(), 4).isEmpty)
    assert(CleanupPolicy.automatic(config(CleanupPolicy.AutoInterval -> "2"), 5).isEmpty)
    assert(CleanupPolicy.automatic(config(CleanupPolicy.AutoInterval -> "2"), 6).contains(
      CleanupPolicy(errorIfTaggedOldVersions = false)))
    assert(CleanupPolicy.automatic(config(CleanupPolicy.AutoInterval -> "0", CleanupPolicy.AutoOlderThan -> "3600s",
      CleanupPolicy.AutoRetainVersions -> "3"), 7).contains(
      CleanupPolicy(Some(Duration.ofHours(1)), Some(3), errorIfTaggedOldVersions = false)))
    intercept[InvalidOptionException](CleanupPolicy.automatic(config(CleanupPolicy.AutoInterval -> "often"), 2))
    intercept[InvalidOptionException](CleanupPolicy.automatic(config(CleanupPolicy.AutoInterval -> "1",
      CleanupPolicy.AutoOlderThan -> "soon"), 2))
    val t = new Table(4) // versions 1..5; a commit of 5 that read 4 keeps 4 and 5
    assert(new Cleanup(t.ds).run(CleanupPolicy(errorIfTaggedOldVersions = false), keepFrom = 4).removedVersions == Seq(1L, 2L, 3L))
  }
}
