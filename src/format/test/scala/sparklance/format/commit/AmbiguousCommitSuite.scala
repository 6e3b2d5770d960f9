package sparklance.format.commit

import java.io.{IOException, OutputStream}
import java.nio.file.Files
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, CommitStateUnknownException}
import sparklance.format.io.{FileEntry, InputFile, LocalStorage, Storage}
import sparklance.format.index.Indices
import sparklance.format.proto.TableProtos
import sparklance.format.proto.TableProtos.{DataFile, DataFragment, IndexMetadata}
import sparklance.format.table.{Dataset, LanceSchema, UncommittedFiles}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}

/**
 * A manifest put that fails may still have written the manifest (a connection reset after the
 * upload). The committer must then find out from the table whether it landed, and when the
 * table cannot be read back either, say so with CommitStateUnknownException and keep every file.
 */
class AmbiguousCommitSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Local storage with scripted failures: the next manifest put, listings, manifest reads. */
  private final class FaultyStorage extends Storage {
    @volatile var writeThenThrow = false // the next manifest put writes, then reports an error
    @volatile var throwWithoutWriting = false // the next manifest put fails before writing
    @volatile var failListings = 0 // that many listings of _versions fail
    @volatile var failManifestReads = 0 // that many manifest reads fail
    @volatile var failPuts = 0 // that many manifest puts fail before writing
    // Puts that fail client-side but that the store completes later, when `landLate` is called.
    @volatile var putsLandingLate = 0
    private val late = scala.collection.mutable.ArrayBuffer.empty[(String, Array[Byte])]
    /** The store completes the requests its client gave up on. */
    def landLate(): Unit = synchronized { late.foreach { case (p, b) => d.putIfAbsent(p, b) }; late.clear() }
    private val d = LocalStorage
    def openInput(path: String): InputFile = {
      if (path.endsWith(".manifest") && failManifestReads > 0) { failManifestReads -= 1; throw new IOException("read timed out") }
      d.openInput(path)
    }
    def create(path: String): OutputStream = d.create(path)
    def putIfAbsent(path: String, bytes: Array[Byte]): Boolean =
      if (path.endsWith(".manifest") && putsLandingLate > 0) {
        putsLandingLate -= 1; synchronized { late += path -> bytes }; throw new IOException("request timed out")
      } else if (path.endsWith(".manifest") && failPuts > 0) {
        failPuts -= 1; throw new IOException("500 Internal Server Error")
      } else if (path.endsWith(".manifest") && throwWithoutWriting) {
        throwWithoutWriting = false; throw new IOException("connection refused")
      } else if (path.endsWith(".manifest") && writeThenThrow) {
        writeThenThrow = false
        d.putIfAbsent(path, bytes)
        throw new IOException("connection reset after the upload")
      } else d.putIfAbsent(path, bytes)
    def overwrite(path: String, bytes: Array[Byte]): Unit = d.overwrite(path, bytes)
    def exists(path: String): Boolean = d.exists(path)
    def list(dir: String): Seq[FileEntry] = {
      if (dir.endsWith("_versions") && failListings > 0) { failListings -= 1; throw new IOException("listing failed") }
      d.list(dir)
    }
    def listDirectories(dir: String): Seq[String] = d.listDirectories(dir)
    def mkdirs(dir: String): Unit = d.mkdirs(dir)
    def delete(path: String): Unit = d.delete(path)
    def deleteRecursively(path: String): Unit = d.deleteRecursively(path)
    def rename(from: String, to: String): Unit = d.rename(from, to)
    def renamesAtomically(path: String): Boolean = d.renamesAtomically(path)
  }

  /** A table at version 1 (empty) and a fragment whose data file exists on disk. */
  private def setup(): (FaultyStorage, Dataset, DataFragment) = {
    val storage = new FaultyStorage
    val ds = new Dataset(storage, Files.createTempDirectory("ambiguous").resolve("t.lance").toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    val file = Storage.join(ds.path, "data/job.lance")
    LocalStorage.putIfAbsent(file, Array[Byte](1, 2, 3))
    val fragment = DataFragment.newBuilder().setPhysicalRows(3)
      .addFiles(DataFile.newBuilder().setPath("job.lance").addFields(0).addColumnIndices(0)).build()
    (storage, ds, fragment)
  }

  /**
   * Index segments for new fragments, each a directory with one file, recording which the committer
   * discards; `beforeSegments` runs before each attempt builds its segments.
   */
  private final class RecordingIndices(ds: Dataset, beforeSegments: () => Unit = () => ()) extends NewFragmentIndices {
    val discarded = scala.collection.mutable.ArrayBuffer.empty[IndexMetadata]
    override def segments(ids: Seq[Long], readVersion: Long): Seq[IndexMetadata] = {
      beforeSegments()
      val uuid = java.util.UUID.randomUUID()
      val bytes = java.nio.ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits).putLong(uuid.getLeastSignificantBits).array()
      val segment = IndexMetadata.newBuilder().setName("probe").addFields(0).setDatasetVersion(readVersion)
        .setUuid(TableProtos.UUID.newBuilder().setUuid(com.google.protobuf.ByteString.copyFrom(bytes))).build()
      LocalStorage.putIfAbsent(Storage.join(ds.path, s"_indices/${Indices.directory(segment)}/segment"), Array[Byte](1))
      Seq(segment)
    }
    override def discard(segments: Seq[IndexMetadata]): Unit = {
      discarded ++= segments
      segments.foreach(s => LocalStorage.deleteRecursively(Storage.join(ds.path, s"_indices/${Indices.directory(s)}")))
    }
  }

  private def dataFileExists(ds: Dataset) = LocalStorage.exists(Storage.join(ds.path, "data/job.lance"))

  test("the put writes the manifest, then throws, then the listing fails: state unknown, files kept") {
    val (storage, ds, fragment) = setup()
    val read = ds.snapshot()
    storage.writeThenThrow = true
    storage.failListings = 100
    val files = new UncommittedFiles(storage, ds.path)
    val e = intercept[CommitStateUnknownException](files.commit(Seq(fragment))(
      new Committer(ds, CommitRetries(3)).commit(Some(read), Operation.Append(Seq(fragment)))))
    assert(e.version == 2L && e.getMessage.contains("may or may not have landed"))
    files.discard(Seq(fragment)) // what Spark does next: abort the write
    assert(dataFileExists(ds), "the data file of a commit that may have landed must stay")
    storage.failListings = 0
    assert(ds.latestVersion == 2L && ds.snapshot().countRows(ds.storage) == 3)
  }

  test("the put writes the manifest and throws, and its manifest cannot be read back: state unknown") {
    val (storage, ds, fragment) = setup()
    val read = ds.snapshot()
    storage.writeThenThrow = true
    storage.failManifestReads = 100
    intercept[CommitStateUnknownException](new Committer(ds, CommitRetries(3)).commit(Some(read), Operation.Append(Seq(fragment))))
    storage.failManifestReads = 0
    assert(ds.latestVersion == 2L)
  }

  test("the put writes the manifest and throws, and the table can be read: the commit is recognised as landed") {
    val (storage, ds, fragment) = setup()
    storage.writeThenThrow = true
    val result = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment)))
    assert(result.version == 2L && ds.versions == Seq(1L, 2L))
  }

  test("a put that failed before writing is retried and lands once") {
    val (storage, ds, fragment) = setup()
    storage.throwWithoutWriting = true
    assert(new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment))).version == 2L)
    assert(ds.versions == Seq(1L, 2L))
  }

  test("a store that keeps failing the put: after a few tries the outcome is unknown, and the files stay") {
    val (storage, ds, fragment) = setup()
    storage.failPuts = 100
    val files = new UncommittedFiles(storage, ds.path)
    val e = intercept[CommitStateUnknownException](files.commit(Seq(fragment))(
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment)))))
    assert(e.version == 2L && e.getMessage.contains("500"))
    assert(storage.failPuts == 100 - Committer.StoreAttempts)
    files.discard(Seq(fragment)) // Spark's abort
    assert(dataFileExists(ds), "a failed put may still land: its files stay")
    assert(ds.versions == Seq(1L))
  }

  test("puts that fail and land after the committer gave up: the files they name are all there") {
    val (storage, ds, fragment) = setup()
    storage.putsLandingLate = 100
    val indexing = new RecordingIndices(ds)
    val files = new UncommittedFiles(storage, ds.path)
    intercept[CommitStateUnknownException](files.commit(Seq(fragment))(
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment)), indexing = Some(indexing))))
    files.discard(Seq(fragment))
    storage.landLate() // the store completes the first of the requests; the others find version 2 taken
    assert(ds.versions == Seq(1L, 2L))
    val landed = ds.snapshot()
    assert(landed.countRows(ds.storage) == 3 && dataFileExists(ds))
    val segments = Indices.parse(landed.file.indexSection, ds.path)
    assert(segments.size == 1 && indexing.discarded.isEmpty)
    assert(LocalStorage.exists(Storage.join(ds.path, s"_indices/${Indices.directory(segments.head)}/segment")))
  }

  test("a put that fails and lands while the committer retries: the retry finds it and returns it, its segments kept") {
    val (storage, ds, fragment) = setup()
    storage.putsLandingLate = 1
    val indexing = new RecordingIndices(ds, beforeSegments = () => storage.landLate())
    val result = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment)), indexing = Some(indexing))
    assert(result.version == 2L && ds.versions == Seq(1L, 2L))
    val segments = Indices.parse(ds.snapshot().file.indexSection, ds.path)
    assert(indexing.discarded.isEmpty, "the segments of an attempt whose put failed may be named by its manifest")
    assert(segments.forall(s => LocalStorage.exists(Storage.join(ds.path, s"_indices/${Indices.directory(s)}/segment"))))
  }

  test("a definite conflict after an uncertain put that proved not to land cleans up") {
    val (storage, ds, fragment) = setup()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Overwrite(Nil, schema)) // another writer replaced the table
    storage.throwWithoutWriting = true
    val files = new UncommittedFiles(storage, ds.path)
    val e = intercept[CommitConflictException](files.commit(Seq(fragment))(
      new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment)))))
    assert(!e.retryable && e.getMessage.contains("Overwrite"))
    assert(!dataFileExists(ds), "a commit that certainly failed removes its files")
    assert(ds.versions == Seq(1L, 2L))
  }

  test("a failed listing after a put that certainly did not write is an ordinary error, and cleans up") {
    val (storage, ds, fragment) = setup()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Append(Nil)) // version 2 is taken: our put reports "exists"
    // The first listing is the committer's look for newer versions before the put, which a
    // failure does not stop; the second, reading the table back after the put, fails.
    storage.failListings = 2
    val files = new UncommittedFiles(storage, ds.path)
    val e = intercept[IOException](files.commit(Seq(fragment))(new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment)))))
    assert(e.getMessage == "listing failed")
    assert(!dataFileExists(ds))
    assert(ds.versions == Seq(1L, 2L))
  }
}
