package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, IntVector, VarBinaryVector, VarCharVector}
import org.apache.arrow.vector.complex.StructVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.deletion.DeletionFiles
import sparklance.format.file.RowBytes
import sparklance.format.FileGoneException
import sparklance.format.io.{Background, ForwardingStorage, InputFile, LocalStorage}

class FragmentScannerSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Writes rows 0..n-1 (value = offset) as one fragment and returns it. */
  private def fragment(dir: String, n: Int, allocator: RootAllocator, version: StorageVersion = StorageVersion.V2_0) = {
    val writer = new FragmentWriter(LocalStorage, dir, schema, version, allocator)
    Using.resource(new BigIntVector("v", allocator)) { v =>
      v.allocateNew(n); (0 until n).foreach(i => v.set(i, i.toLong)); v.setValueCount(n)
      writer.write(Seq(v))
    }
    writer.finish().head.toBuilder.setId(4).build()
  }

  // The randomized test's columns: an integer, and a string that is NULL every 13th row.
  private val twoColumns = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null),
    new Field("s", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)).asJava))

  private def text(i: Int): Option[String] = if (i % 13 == 5) None else Some("r" * (i % 7) + i)

  private def twoColumnFragment(dir: String, n: Int, allocator: RootAllocator, version: StorageVersion) = {
    val writer = new FragmentWriter(LocalStorage, dir, twoColumns, version, allocator)
    Using.resources(new BigIntVector("v", allocator), new VarCharVector("s", allocator)) { (v, s) =>
      v.allocateNew(n); s.allocateNew(n)
      (0 until n).foreach { i => v.set(i, i.toLong); text(i).fold(s.setNull(i))(t => s.setSafe(i, t.getBytes("UTF-8"))) }
      v.setValueCount(n); s.setValueCount(n)
      writer.write(Seq(v, s))
    }
    writer.finish().head.toBuilder.setId(4).build()
  }

  /** Storage whose data files (opened with their length) tell `onRead` of every read. */
  private class WatchedStorage(onRead: (Long, Int) => Unit) extends ForwardingStorage {
    override def openInput(path: String, length: Long): InputFile = {
      val file = super.openInput(path, length)
      new InputFile {
        def path: String = file.path
        def length: Long = file.length
        def read(position: Long, k: Int): Array[Byte] = { onRead(position, k); file.read(position, k) }
        def close(): Unit = file.close()
      }
    }
  }

  test("live rows and their offsets, across deleted runs and scattered deletions") {
    Using.resource(new RootAllocator()) { allocator =>
      val dir = Files.createTempDirectory("scan").toString
      val n = 20000
      val deleted = new RoaringBitmap()
      deleted.add(0L, 10L)                         // a deleted prefix
      (3000 until 4000 by 3).foreach(deleted.add)   // scattered: compacted windows
      deleted.add(9000L, 12500L)                   // a run longer than a batch
      deleted.add(19999)
      val base = fragment(dir, n, allocator)
      val withDeletions = base.toBuilder.setDeletionFile(DeletionFiles.write(LocalStorage, dir, 4, 1, deleted)).build()
      for ((start, end) <- Seq((0L, n.toLong), (2500L, 15000L))) {
        val scanner = new FragmentScanner(LocalStorage, BasePaths.own(dir), withDeletions, schema.fields, allocator, start, end, batchRows = 1024)
        val values = scala.collection.mutable.ArrayBuffer.empty[Long]
        val offsets = scala.collection.mutable.ArrayBuffer.empty[Int]
        scanner.foreach { b =>
          val v = b.vectors.head.asInstanceOf[BigIntVector]
          (0 until b.numRows).foreach(i => values += v.get(i))
          val one = (0 until b.numRows).map(b.offset) // before `offsets` is built: a run's offsets come without it
          offsets ++= b.offsets
          assert(one == b.offsets.toSeq)
          b.close()
        }
        scanner.close()
        val expected = (start until end).filterNot(i => deleted.contains(i.toInt))
        assert(values == expected)
        assert(offsets.map(_.toLong) == expected)
      }
    }
  }

  test("randomized deletions: every live row of the range, once and in order with its values, on 2.0 and 2.2 fragments") {
    Using.resource(new RootAllocator()) { allocator =>
      val rnd = new scala.util.Random(57)
      val n = 30000
      for (version <- Seq(StorageVersion.V2_0, StorageVersion.V2_2)) {
        val dir = Files.createTempDirectory("scan-random").toString
        val base = twoColumnFragment(dir, n, allocator, version)
        for (round <- 0 until 12) {
          // Every kind of pattern: spread (every k-th row), random at several rates, runs, and mixes of them.
          val deleted = new RoaringBitmap()
          round % 4 match {
            case 0 => val k = 2 + rnd.nextInt(150); (rnd.nextInt(k) until n by k).foreach(deleted.add)
            case 1 => val rate = Seq(0.001, 0.01, 0.3, 0.97)(rnd.nextInt(4)); (0 until n).filter(_ => rnd.nextDouble() < rate).foreach(deleted.add)
            case 2 => (0 until 1 + rnd.nextInt(6)).foreach { _ => val a = rnd.nextInt(n); deleted.add(a.toLong, math.min(n, a + 1 + rnd.nextInt(9000)).toLong) }
            case _ =>
              (0 until n by 1 + rnd.nextInt(40)).foreach(deleted.add)
              val a = rnd.nextInt(n); deleted.add(a.toLong, math.min(n, a + rnd.nextInt(5000)).toLong)
          }
          if (rnd.nextBoolean()) deleted.add(n - 1)
          val withDeletions = base.toBuilder.setDeletionFile(DeletionFiles.write(LocalStorage, dir, 4, round + 1, deleted)).build()
          val start = if (rnd.nextBoolean()) 0L else rnd.nextInt(n / 2).toLong
          val end = if (rnd.nextBoolean()) n.toLong else start + rnd.nextInt(n - start.toInt + 1)
          val batchRows = Seq(1, 7, 1024, 8192)(rnd.nextInt(4))
          val scanner = new FragmentScanner(LocalStorage, BasePaths.own(dir), withDeletions, twoColumns.fields, allocator, start, end, batchRows = batchRows)
          val values = scala.collection.mutable.ArrayBuffer.empty[Long]
          val texts = scala.collection.mutable.ArrayBuffer.empty[Option[String]]
          val offsets = scala.collection.mutable.ArrayBuffer.empty[Int]
          try scanner.foreach { b =>
            try {
              val v = b.vectors.head.asInstanceOf[BigIntVector]
              val s = b.vectors(1).asInstanceOf[VarCharVector]
              (0 until b.numRows).foreach { i => values += v.get(i); texts += Option(s.getObject(i)).map(_.toString) }
              offsets ++= b.offsets
            } finally b.close()
          } finally scanner.close()
          val expected = (start until end).filterNot(i => deleted.contains(i.toInt))
          val what = s"$version round $round: rows $start-$end, batches of $batchRows, ${deleted.getCardinality} deleted"
          assert(values == expected, what)
          assert(texts == expected.map(i => text(i.toInt)), what)
          assert(offsets.map(_.toLong) == expected, what)
        }
      }
    }
  }

  test("batches stay within batchBytes of decoded data where rows grow large deep in a fragment (2.0, 2.1, 2.2)") {
    // 3000 rows of a few bytes, then 600 rows of 64 KiB (a binary and a struct's string): a batch
    // sized from the small rows before it would ask for thousands of the large ones.
    val nullable = (name: String, t: ArrowType) => new Field(name, FieldType.nullable(t), null)
    val wide = LanceSchema.fromArrow(new Schema(List(
      new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
      nullable("payload", ArrowType.Binary.INSTANCE),
      new Field("st", FieldType.nullable(ArrowType.Struct.INSTANCE),
        List(nullable("a", ArrowType.Utf8.INSTANCE), nullable("b", new ArrowType.Int(32, true))).asJava)).asJava))
    val (small, large) = (3000, 600)
    def size(i: Int): Int = if (i < small) i % 7 else (64 << 10) + i % 5
    def bytes(i: Int, salt: Int): Array[Byte] = Array.tabulate(size(i))(k => ((i * 31 + k * salt) % 251).toByte)
    val budget = 1L << 20
    Using.resource(new RootAllocator()) { allocator =>
      for (version <- Seq(StorageVersion.V2_0, StorageVersion.V2_1, StorageVersion.V2_2)) {
        val dir = Files.createTempDirectory("scan-growing").toString
        val writer = new FragmentWriter(LocalStorage, dir, wide, version, allocator)
        for (from <- 0 until small + large by 200) {
          val n = math.min(200, small + large - from)
          val ids = new BigIntVector("id", allocator)
          val payload = new VarBinaryVector("payload", allocator)
          val st = wide.fields(2).toArrow.createVector(allocator).asInstanceOf[StructVector]
          Using.resources(ids, payload, st) { (ids, payload, st) =>
            ids.allocateNew(n); payload.allocateNew(n); st.allocateNew()
            val a = st.getChild("a").asInstanceOf[VarCharVector]
            val b = st.getChild("b").asInstanceOf[IntVector]
            for (k <- 0 until n) {
              val i = from + k
              ids.set(k, i.toLong)
              payload.setSafe(k, bytes(i, 7))
              st.setIndexDefined(k)
              a.setSafe(k, bytes(i, 3).map(x => ('a' + (x & 15)).toByte))
              b.setSafe(k, i)
            }
            Seq[org.apache.arrow.vector.ValueVector](ids, payload, a, b, st).foreach(_.setValueCount(n))
            writer.write(Seq(ids, payload, st))
          }
        }
        val fragment = writer.finish().head
        // Every row, then every third row (picked one by one).
        for (only <- Seq(None, Some(RoaringBitmap.bitmapOf((0 until small + large by 3): _*)))) {
          val seen = scala.collection.mutable.ArrayBuffer.empty[Long]
          Using.resource(new FragmentScanner(LocalStorage, BasePaths.own(dir), fragment, wide.fields, allocator, 0, fragment.getPhysicalRows,
              only = only, batchBytes = budget)) { scanner =>
            scanner.foreach { batch =>
              try {
                val held = batch.vectors.map(v => RowBytes(v, 0, batch.numRows)).sum
                assert(held <= budget + 2 * (size(small) + 16L), s"$version: a batch of ${batch.numRows} rows holds $held bytes")
                val Seq(id, p, s) = batch.vectors
                val a = s.asInstanceOf[StructVector].getChild("a").asInstanceOf[VarCharVector]
                for (k <- 0 until batch.numRows) {
                  val i = id.asInstanceOf[BigIntVector].get(k).toInt
                  seen += i
                  assert(p.asInstanceOf[VarBinaryVector].get(k).sameElements(bytes(i, 7)), s"$version: payload of row $i")
                  assert(a.get(k).sameElements(bytes(i, 3).map(x => ('a' + (x & 15)).toByte)), s"$version: st.a of row $i")
                }
              } finally batch.close()
            }
          }
          assert(seen == only.fold[Seq[Long]]((0 until small + large).map(_.toLong))(_.toArray.toSeq.map(_.toLong)), version)
        }
      }
    }
  }

  test("where the store reads in the background, a fragment's deletion file is read while its data file opens") {
    Using.resource(new RootAllocator()) { allocator =>
      val dir = Files.createTempDirectory("scan").toString
      val n = 5000
      val deleted = RoaringBitmap.bitmapOf(0, 7, 4999)
      val withDeletions = fragment(dir, n, allocator).toBuilder.setDeletionFile(DeletionFiles.write(LocalStorage, dir, 4, 1, deleted)).build()
      val dataRead = new java.util.concurrent.CountDownLatch(1)
      // The deletion file's read waits until the data file has been read from: read one after the other, they wait 10 s and fail.
      val storage = new WatchedStorage(onRead = (_, _) => dataRead.countDown()) {
        override def inBackground[T](path: String)(work: () => T): Background[T] = ForwardingStorage.onOwnThread(work)
        override def openInput(path: String): InputFile = {
          if (path.contains("_deletions") && !dataRead.await(10, java.util.concurrent.TimeUnit.SECONDS))
            throw new java.io.IOException(s"$path was read before the data file")
          super.openInput(path)
        }
      }
      val scanner = new FragmentScanner(storage, BasePaths.own(dir), withDeletions, schema.fields, allocator, 0, n)
      val values = scala.collection.mutable.ArrayBuffer.empty[Long]
      scanner.foreach { b => val v = b.vectors.head.asInstanceOf[BigIntVector]; (0 until b.numRows).foreach(i => values += v.get(i)); b.close() }
      scanner.close()
      assert(values == (0L until n).filterNot(i => deleted.contains(i.toInt)))
      // A deletion file gone fails the scanner as it opens, with the error a reader catches.
      val other = withDeletions.toBuilder.setDeletionFile(DeletionFiles.write(LocalStorage, dir, 4, 2, deleted)).build()
      Files.delete(java.nio.file.Paths.get(BasePaths.own(dir).deletionFile(other)))
      assertThrows[FileGoneException](new FragmentScanner(storage, BasePaths.own(dir), other, schema.fields, allocator, 0, n))
    }
  }

  test("a data file's metadata is read by the first scan of it in a process; later scans read only its pages") {
    Using.resource(new RootAllocator()) { allocator =>
      val dir = Files.createTempDirectory("scan").toString
      val n = 50000
      for (version <- Seq(StorageVersion.V2_0, StorageVersion.V2_2)) {
        val f = twoColumnFragment(dir, n, allocator, version)
        val reads = scala.collection.mutable.ArrayBuffer.empty[(Long, Int)]
        val storage = new WatchedStorage(onRead = (position, k) => reads += ((position, k)))
        def scan(): Seq[(Long, Option[String])] = {
          val scanner = new FragmentScanner(storage, BasePaths.own(dir), f, twoColumns.fields, allocator, 0, n)
          val rows = scanner.flatMap { b =>
            val (v, s) = (b.vectors(0).asInstanceOf[BigIntVector], b.vectors(1).asInstanceOf[VarCharVector])
            try (0 until b.numRows).map(i => v.get(i) -> Option(s.getObject(i)).map(_.toString)) finally b.close()
          }.toList
          scanner.close()
          rows
        }
        val length = f.getFiles(0).getFileSizeBytes
        assert(scan() == (0 until n).map(i => i.toLong -> text(i)), version)
        assert(reads.exists { case (p, k) => p + k == length }, s"$version: the first scan reads the file's end")
        reads.clear()
        assert(scan() == (0 until n).map(i => i.toLong -> text(i)), version)
        // Pages only: nothing of the 40-byte footer.
        assert(reads.nonEmpty && !reads.exists { case (p, k) => p + k > length - 40 }, s"$version: ${reads.takeRight(3)} of $length bytes")
      }
    }
  }
}
