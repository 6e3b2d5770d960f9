package sparklance.format.table

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.CorruptFileException
import sparklance.format.proto.TableProtos.{BasePath, DataFile, DataFragment, DeletionFile, IndexMetadata, Manifest, UUID}

/** Where files of a clone or branch are: by their base id, as Lance resolves them (docs/format-branches.md). */
class BasePathsSuite extends AnyFunSuite {
  private val manifest = Manifest.newBuilder()
    .addBasePaths(BasePath.newBuilder().setId(0).setIsDatasetRoot(true).setPath("/src/t.lance"))
    .addBasePaths(BasePath.newBuilder().setId(1).setName("dev").setIsDatasetRoot(true).setPath("/src/t.lance/tree/dev/"))
    .addBasePaths(BasePath.newBuilder().setId(2).setIsDatasetRoot(false).setPath("/cold/files"))
    .build()
  private val files = BasePaths.of("/wh/db/c.lance", manifest)

  test("data files: own ones under the table, others under their base's data/ (or the base itself when it is no dataset root)") {
    assert(files.dataFile(DataFile.newBuilder().setPath("a.lance").build()) == "/wh/db/c.lance/data/a.lance")
    assert(files.dataFile(DataFile.newBuilder().setPath("a.lance").setBaseId(0).build()) == "/src/t.lance/data/a.lance")
    assert(files.dataFile(DataFile.newBuilder().setPath("b.lance").setBaseId(1).build()) == "/src/t.lance/tree/dev/data/b.lance")
    assert(files.dataFile(DataFile.newBuilder().setPath("c.lance").setBaseId(2).build()) == "/cold/files/c.lance")
    assert(files.bases(1).name.contains("dev"))
  }

  test("deletion files and index directories by their own base ids") {
    val deletion = DeletionFile.newBuilder().setReadVersion(3).setId(42).setBaseId(0)
    val fragment = DataFragment.newBuilder().setId(7).setDeletionFile(deletion).build()
    assert(files.deletionFile(fragment) == "/src/t.lance/_deletions/7-3-42.arrow")
    assert(files.deletionFile(fragment.toBuilder.setDeletionFile(deletion.clearBaseId()).build()) == "/wh/db/c.lance/_deletions/7-3-42.arrow")
    val uuid = UUID.newBuilder().setUuid(com.google.protobuf.ByteString.copyFrom(Array.fill[Byte](16)(0x11))).build()
    val index = IndexMetadata.newBuilder().setUuid(uuid).setName("x_idx")
    assert(files.indexDir(index.setBaseId(1).build()) == "/src/t.lance/tree/dev/_indices/11111111-1111-1111-1111-111111111111")
    assert(files.indexDir(index.clearBaseId().build()) == "/wh/db/c.lance/_indices/11111111-1111-1111-1111-111111111111")
  }

  test("blobs relative to a base: under the base's own path, dataset root or not (as pylance 14 reads them)") {
    assert(files.blob(2, "sub/x0.bin") == "/cold/files/sub/x0.bin")
    assert(files.blob(1, "m.blob") == "/src/t.lance/tree/dev/m.blob")
    val e = intercept[CorruptFileException](files.blob(9, "x.bin"))
    assert(e.getMessage.contains("base path 9"))
  }

  test("a base id the manifest does not list is a corrupt table, named") {
    val e = intercept[CorruptFileException](files.dataFile(DataFile.newBuilder().setPath("a.lance").setBaseId(9).build()))
    assert(e.getMessage.contains("base path 9") && e.getMessage.contains("0, 1, 2"))
  }

  test("Lance's object store URIs as our storage opens them") {
    assert(BasePaths.location("s3a://b/wh/t.lance", "s3://b/src/t.lance") == "s3a://b/src/t.lance")
    assert(BasePaths.location("/wh/t.lance", "file:///src/t.lance") == "/src/t.lance")
    assert(BasePaths.location("/wh/t.lance", "/src/t.lance/") == "/src/t.lance")
    assert(BasePaths.location("hdfs://nn:8020/wh/t.lance", "hdfs://nn:8020/src") == "hdfs://nn:8020/src")
  }

  test("branch names: Lance's rules, '/' nesting as %2F in the file name, and the root found back from a branch's path") {
    for (ok <- Seq("dev", "feature/login", "release/v1.2.3", "a_b-c.d")) Branches.checkName(ok)
    for (bad <- Seq("", "/a", "a/", "a//b", "a..b", "main", "x.lock", "sp ace", "a\\b"))
      intercept[sparklance.format.InvalidOptionException](Branches.checkName(bad))
    assert(Branches.fileName("bugfix/issue-123") == "bugfix%2Fissue-123.json")
    assert(Branches.location("/wh/t.lance", "feature/x") == "/wh/t.lance/tree/feature/x")
    assert(Branches.rootOf("/wh/t.lance/tree/feature/x", "feature/x") == "/wh/t.lance")
  }

  test("branch files: pylance 14's JSON (camelCase, lineage) both ways") {
    val json = """{"parentBranch": "dev", "identifier": {"version_mapping": [[2, "67bb"], [4, "fe72"]]},
                 | "parentVersion": 4, "createAt": 1796157413, "manifestSize": 623, "metadata": {}}""".stripMargin
    val b = Branches.decode("f", "feature/x", json.getBytes("UTF-8"))
    assert(b == Branch("feature/x", Some("dev"), 4, java.time.Instant.ofEpochSecond(1796157413), 623, Seq(2L -> "67bb", 4L -> "fe72"), Map.empty))
    assert(Branches.decode("f", "feature/x", Branches.encode(b)) == b)
    val written = new String(Branches.encode(b.copy(parentBranch = None)), "UTF-8")
    for (key <- Seq("\"parentBranch\" : null", "\"version_mapping\"", "\"parentVersion\" : 4", "\"createAt\"", "\"manifestSize\""))
      assert(written.contains(key), written)
  }
}
