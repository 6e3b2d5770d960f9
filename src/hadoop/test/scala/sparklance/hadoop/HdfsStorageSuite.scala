package sparklance.hadoop

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, FileNotFoundException, IOException, ObjectInputStream, ObjectOutputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}
import java.util.concurrent.{Callable, CyclicBarrier, Executors, TimeUnit}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.hdfs.MiniDFSCluster
import org.roaringbitmap.RoaringBitmap
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.concurrent.duration._
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try, Using}
import sparklance.format.{CommitConflictException, UnsupportedFeatureException}
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.{FileEntry, LocalStorage, Storage}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{Dataset, FragmentScanner, FragmentWriter, LanceSchema, Snapshot, StorageVersion}

/** HadoopStorage against a real, in-process HDFS (one MiniDFSCluster for the whole suite). */
class HdfsStorageSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var baseDir: JPath = _
  private var cluster: MiniDFSCluster = _
  private var root: String = _        // hdfs://localhost:port/sparklance
  private var storage: HadoopStorage = _
  private var counter = 0

  override def beforeAll(): Unit = {
    super.beforeAll()
    baseDir = Files.createTempDirectory("sparklance-minidfs")
    cluster = MiniHdfs.start(baseDir)
    root = s"${cluster.getURI}/sparklance"
    storage = HadoopStorage.fromConf(Map("dfs.replication" -> "1"))
  }

  override def afterAll(): Unit = {
    try if (cluster != null) cluster.shutdown(true)
    finally {
      if (baseDir != null) LocalStorage.deleteRecursively(baseDir.toString)
      super.afterAll()
    }
  }

  /** A fresh directory on HDFS for one test. */
  private def dir(name: String): String = synchronized { counter += 1; s"$root/$name-$counter" }

  private def write(s: Storage, path: String, text: String): Unit =
    Using.resource(s.create(path))(_.write(text.getBytes(UTF_8)))
  private def read(s: Storage, path: String): String = new String(s.readAll(path), UTF_8)

  test("read, write, list, rename and delete on HDFS") {
    val d = dir("basic")
    assert(storage.list(d).isEmpty && storage.listDirectories(d).isEmpty)
    write(storage, s"$d/a/one.bin", "hello, hdfs")  // parents are created
    write(storage, s"$d/two.bin", "0123456789")
    intercept[IOException](write(storage, s"$d/two.bin", "again")) // create never replaces
    assert(read(storage, s"$d/two.bin") == "0123456789")
    Using.resource(storage.openInput(s"$d/two.bin")) { in =>
      assert(in.length == 10)
      assert(new String(in.read(3, 4), UTF_8) == "3456")
      intercept[java.io.EOFException](in.read(8, 4))
    }
    intercept[FileNotFoundException](storage.openInput(s"$d/missing"))
    val listed = storage.list(d)
    assert(listed.map(e => (e.name, e.size)) == Seq(("two.bin", 10L)))
    assert(math.abs(listed.head.modifiedMillis - System.currentTimeMillis()) < 60000, "modification time of a fresh file")
    assert(storage.listDirectories(d) == Seq("a"))
    assert(storage.exists(s"$d/a/one.bin") && !storage.exists(s"$d/nope"))

    storage.overwrite(s"$d/hint.json", "1".getBytes(UTF_8))
    storage.overwrite(s"$d/hint.json", "22".getBytes(UTF_8))
    assert(read(storage, s"$d/hint.json") == "22")

    storage.rename(s"$d/two.bin", s"$d/moved/two.bin")
    assert(!storage.exists(s"$d/two.bin") && read(storage, s"$d/moved/two.bin") == "0123456789")
    intercept[IOException](storage.rename(s"$d/hint.json", s"$d/moved/two.bin")) // target exists
    storage.rename(s"$d/a", s"$d/b")                                               // directories too
    assert(storage.listDirectories(d).toSet == Set("b", "moved"))

    storage.delete(s"$d/hint.json")
    storage.delete(s"$d/hint.json") // deleting what is gone is fine
    assert(!storage.exists(s"$d/hint.json"))
    storage.mkdirs(s"$d/empty")
    storage.deleteRecursively(d)
    assert(!storage.exists(d) && storage.list(d).isEmpty)
  }

  /** 8 threads race putIfAbsent for each of `rounds` names: exactly one wins each, intact. */
  private def race(s: Storage, rounds: Int = 5): Unit = {
    val d = dir("race")
    val threads = 8
    val pool = Executors.newFixedThreadPool(threads)
    try for (round <- 0 until rounds) {
      val target = s"$d/_versions/$round.manifest"
      val barrier = new CyclicBarrier(threads)
      val results = (0 until threads).map { t =>
        pool.submit(new Callable[Boolean] {
          def call(): Boolean = {
            barrier.await()
            s.putIfAbsent(target, s"writer $t ".getBytes(UTF_8) ++ Array.fill[Byte](1000)(t.toByte))
          }
        })
      }.map(_.get(30, TimeUnit.SECONDS))
      assert(results.count(identity) == 1, s"round $round: ${results.mkString(",")}")
      val winner = results.indexOf(true)
      val bytes = s.readAll(target)
      assert(new String(bytes.take(8), UTF_8) == s"writer $winner" && bytes.length == 1009 && bytes.last == winner.toByte)
    } finally pool.shutdownNow()
    // the losers' temporary files are gone
    assert(s.list(s"$d/_versions").map(_.name).sorted == (0 until rounds).map(r => s"$r.manifest").sorted)
  }

  test("putIfAbsent: of 8 racing writers exactly one wins (rename without overwrite, the HDFS default)") {
    race(storage)
  }

  test("putIfAbsent: the other modes are atomic on HDFS too (direct create, JVM lock)") {
    race(HadoopStorage.fromConf(Map("sparklance.storage.hdfs.putIfAbsent" -> "create")))
    race(HadoopStorage.fromConf(Map("sparklance.storage.hdfs.putIfAbsent" -> "lock", CommitLock.ClassKey -> "jvm")))
    val noLock = HadoopStorage.fromConf(Map("sparklance.storage.hdfs.putIfAbsent" -> "lock"))
    assert(intercept[sparklance.format.LanceException](noLock.putIfAbsent(s"${dir("x")}/f", Array(1)))
      .getMessage.contains(CommitLock.ClassKey))
  }

  test("a store without atomic put-if-absent is refused unless the user opts in to a lock") {
    val local = Files.createTempDirectory("fakeobj")
    try {
      val fakeConf = Map("fs.fakeobj.impl" -> classOf[ObjectStoreLikeFileSystem].getName,
        "fs.fakeobj.impl.disable.cache" -> "true")
      val path = s"fakeobj://${local.toUri.getPath}/_versions/1.manifest"
      val refusing = Storages.forPath(path, fakeConf)
      assert(refusing.isInstanceOf[HadoopStorage])
      val e = intercept[UnsupportedFeatureException](refusing.putIfAbsent(path, Array[Byte](1)))
      assert(e.getMessage.contains("fakeobj") && e.getMessage.contains(CommitLock.ClassKey) &&
        e.getMessage.contains("If-None-Match"))
      assert(!refusing.exists(path))
      val locked = Storages.forPath(path, fakeConf + (CommitLock.ClassKey -> "jvm"))
      assert(locked.putIfAbsent(path, Array[Byte](1)))
      assert(!locked.putIfAbsent(path, Array[Byte](2)))
      assert(locked.readAll(path).toSeq == Seq[Byte](1))
    } finally LocalStorage.deleteRecursively(local.toString)
  }

  test("a HadoopStorage given file: paths commits like local storage") {
    val local = Files.createTempDirectory("hadoop-local")
    try {
      val s = new HadoopStorage(new Configuration())
      val target = s"${local.toUri}_versions/1.manifest"
      assert(s.putIfAbsent(target, Array[Byte](1)) && !s.putIfAbsent(target, Array[Byte](2)))
      assert(s.readAll(target).toSeq == Seq[Byte](1))
      assert(s.list(s"${local.toUri}_versions").map(_.name) == Seq("1.manifest"))
    } finally LocalStorage.deleteRecursively(local.toString)
  }

  test("Storage.forPath picks local storage for plain paths and file: URIs, Hadoop for other schemes") {
    assert(Storages.forPath("/tmp/x.lance") eq LocalStorage)
    assert(Storages.forPath("relative/x.lance") eq LocalStorage)
    assert(Storages.forPath("file:/tmp/x.lance") eq LocalStorage)
    assert(Storages.forPath("file:///tmp/x.lance") eq LocalStorage)
    assert(Storages.forPath("C:\\data\\x.lance") eq LocalStorage)
    assert(Storages.forPath(s"$root/t.lance").isInstanceOf[HadoopStorage])
    assert(Storages.forPath("s3a://bucket/t.lance").isInstanceOf[HadoopStorage])
    val h = Storages.forPath(s"$root/t.lance", Map("spark.hadoop.dfs.replication" -> "1", "fs.x" -> "y"))
      .asInstanceOf[HadoopStorage]
    assert(h.configuration.get("dfs.replication") == "1" && h.configuration.get("fs.x") == "y")
    // One storage per configuration: every split a task reads asks for one.
    assert(Storages.forPath("s3a://bucket/t.lance", Map("fs.x" -> "y")) eq Storages.forPath("s3a://other/u.lance", Map("fs.x" -> "y")))
    assert(Storages.forPath("s3a://bucket/t.lance", Map("fs.x" -> "z")).asInstanceOf[HadoopStorage].configuration.get("fs.x") == "z")
  }

  test("a HadoopStorage survives Java serialization with its configuration (as sent to executors)") {
    val d = dir("ser")
    val original = HadoopStorage.fromConf(Map("dfs.replication" -> "1", "sparklance.test.key" -> "v"))
    write(original, s"$d/f.txt", "shipped")
    val bytes = new ByteArrayOutputStream()
    Using.resource(new ObjectOutputStream(bytes))(_.writeObject(original))
    val copy = Using.resource(new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)))(_.readObject())
      .asInstanceOf[HadoopStorage]
    assert(copy.configuration.get("sparklance.test.key") == "v")
    assert(read(copy, s"$d/f.txt") == "shipped")
    assert(copy.putIfAbsent(s"$d/g", Array[Byte](1)) && !original.putIfAbsent(s"$d/g", Array[Byte](2)))
  }

  // ---- a Lance table on HDFS, through the format layer ----

  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Writes the given values as data files (a new file every 1000 rows) and returns the fragments. */
  private def writeFragments(table: String, values: Seq[Long], allocator: RootAllocator): Seq[DataFragment] =
    Using.resource(new FragmentWriter(storage, table, schema, StorageVersion.V2_0, allocator, maxRowsPerFile = 1000)) { writer =>
      Using.resource(new BigIntVector("v", allocator)) { v =>
        v.allocateNew(values.size)
        values.zipWithIndex.foreach { case (x, i) => v.set(i, x) }
        v.setValueCount(values.size)
        writer.write(Seq(v))
      }
      writer.finish()
    }

  private def scan(snapshot: Snapshot, allocator: RootAllocator): Seq[Long] =
    snapshot.fragments.flatMap { f =>
      Using.resource(new FragmentScanner(storage, snapshot.files, f, snapshot.schema.fields, allocator, 0,
        f.getPhysicalRows, batchRows = 700)) { scanner =>
        scanner.flatMap { b =>
          try { val v = b.vectors.head.asInstanceOf[BigIntVector]; (0 until b.numRows).map(v.get) }
          finally b.close()
        }.toVector
      }
    }

  /** Runs both bodies at once (released together by a barrier) and returns their outcomes. */
  private def concurrently[A](a: => A, b: => A): (Try[A], Try[A]) = {
    implicit val ec: ExecutionContext = ExecutionContext.global
    val barrier = new CyclicBarrier(2)
    val fa = Future { barrier.await(); Try(a) }
    val fb = Future { barrier.await(); Try(b) }
    (Await.result(fa, 60.seconds), Await.result(fb, 60.seconds))
  }

  test("a Lance table on HDFS: create, append, scan, concurrent appends rebase, an append cannot land on a concurrent overwrite") {
    Using.resource(new RootAllocator()) { allocator =>
      val table = s"${dir("db")}/t.lance"
      val ds = new Dataset(storage, table)
      assert(!ds.exists)
      new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
      assert(ds.versions == Seq(1L))

      val first = writeFragments(table, 0L until 2500L, allocator)
      assert(first.size == 3)
      val v2 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(first))
      assert(v2.version == 2 && v2.snapshot.countRows(ds.storage) == 2500)
      assert(scan(ds.snapshot(), allocator) == (0L until 2500L))

      // A delete: deletion files are written to HDFS next to the data.
      val byId = v2.snapshot.fragments.map(f => f.getId -> f).toMap
      val gone = Map(0L -> RoaringBitmap.bitmapOfRange(0, 100), 2L -> RoaringBitmap.bitmapOf(0, 7, 499))
      val updated = gone.toSeq.map { case (id, rows) =>
        byId(id).toBuilder.setDeletionFile(DeletionFiles.write(storage, table, id, 2, rows)).build()
      }
      val v3 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Delete(updated, Nil, "v < 100 OR v IN (2000, 2007, 2499)"))
      assert(v3.version == 3 && v3.snapshot.countRows(ds.storage) == 2397)
      val base = (0L until 2500L).filterNot(v => v < 100 || Set(2000L, 2007L, 2499L)(v))
      assert(scan(ds.snapshot(), allocator) == base)

      // Two appends planned against version 3 race: the loser rebases, both land.
      val read2 = ds.snapshot()
      val a = writeFragments(table, 10000L until 10300L, allocator)
      val b = writeFragments(table, 20000L until 20400L, allocator)
      val (ra, rb) = concurrently(
        new Committer(ds).commit(Some(read2), Operation.Append(a)).version,
        new Committer(ds).commit(Some(read2), Operation.Append(b)).version)
      assert(Set(ra.get, rb.get) == Set(4L, 5L))
      val v4 = ds.snapshot()
      assert(v4.version == 5 && v4.countRows(ds.storage) == 3097)
      assert(scan(v4, allocator).sorted == (base ++ (10000L until 10300L) ++ (20000L until 20400L)))
      assert(v4.fragments.map(_.getId).distinct.size == v4.fragments.size)

      // An overwrite and an append planned against version 5 race. As in Lance, an append cannot land
      // on a table replaced under it, while a (blind) overwrite replaces whatever was appended
      // first: the table ends with exactly the overwrite's rows either way.
      val read4 = ds.snapshot()
      val appended = writeFragments(table, 30000L until 30050L, allocator)
      val replacement = writeFragments(table, 40000L until 40010L, allocator)
      val (append, overwrite) = concurrently(
        new Committer(ds).commit(Some(read4), Operation.Append(appended)).version,
        new Committer(ds).commit(Some(read4), Operation.Overwrite(replacement, schema)).version)
      assert(overwrite.isSuccess, overwrite)
      append match {
        case Success(v) => assert(v < overwrite.get)
        case Failure(e) => assert(e.isInstanceOf[CommitConflictException], e)
      }
      val landed = if (append.isSuccess) 7L else 6L
      assert(ds.versions == (1L to landed))
      val latest = ds.snapshot()
      assert(scan(latest, allocator).sorted == (40000L until 40010L))
      // Older versions stay readable (time travel), and nothing half-written is left in _versions.
      assert(scan(ds.snapshot(Some(2L)), allocator) == (0L until 2500L))
      assert(scan(ds.snapshot(Some(3L)), allocator) == base)
      val names = storage.list(Storage.join(table, "_versions")).map(_.name)
      assert(names.count(_.endsWith(".manifest")) == landed && names.forall(n => n.endsWith(".manifest") || n == "latest_version_hint.json"), names)
      assert(read(storage, Storage.join(table, "_versions/latest_version_hint.json")) == s"""{"version":$landed}""")
    }
  }
}
