package sparklance.format.file

import java.io.IOException
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicInteger
import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.file.v2_0.{FileReader20, FileWriter20}
import sparklance.format.file.v2_1.{Canon, FileReader21, Writer21Fixtures}
import sparklance.format.io.InputFile
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Reads ahead in the background (see [[Prefetcher]]) must not change what a reader returns:
 * randomized row ranges (consecutive, with gaps as deletions leave, and restarts) read with reads
 * ahead against without, every file version, nulls, nested fields, long values and vectors; a
 * reader closed early, a failing read, and the bound on the bytes held.
 */
class ReadAheadSuite extends AnyFunSuite {
  import Writer21Fixtures._

  /** An in-memory file; `fail` says which reads (position, length, on a background thread) throw. */
  private class File(bytes: Array[Byte], readAhead: Int, fail: (Long, Int, Boolean) => Boolean = (_, _, _) => false,
      settle: Boolean = false) extends InputFile {
    val path = "mem://read-ahead.lance"
    val inFlight = new AtomicInteger()
    @volatile var closedDuringRead = false
    @volatile var gate: CountDownLatch = null
    def length: Long = bytes.length
    override def readAheadBytes: Int = readAhead
    def read(position: Long, len: Int): Array[Byte] = {
      val background = Thread.currentThread.getName.startsWith("sparklance-read-ahead")
      // With `settle`, a reader's own read first lets the background reads issued end: on a loaded
      // machine the reader would otherwise often come first, and read the ranges itself.
      if (settle && !background) {
        val pool = sparklance.format.Parallel.background.asInstanceOf[java.util.concurrent.ThreadPoolExecutor]
        while (!pool.getQueue.isEmpty || pool.getActiveCount > 0) Thread.onSpinWait()
      }
      inFlight.incrementAndGet()
      try {
        if (background && gate != null) gate.await()
        if (fail(position, len, background)) throw new IOException(s"injected failure reading $len bytes at $position")
        if (position < 0 || position + len > bytes.length) throw new java.io.EOFException(s"$len bytes at $position")
        java.util.Arrays.copyOfRange(bytes, position.toInt, position.toInt + len)
      } finally inFlight.decrementAndGet()
    }
    def close(): Unit = if (inFlight.get > 0) closedDuringRead = true
  }

  private def open(version: String, input: InputFile, budget: Long): DataFileReader =
    if (version == "2.0") new FileReader20(input, budget) else new FileReader21(input, budget)

  private def readAheads(r: DataFileReader): Option[Prefetcher] = r match {
    case r: FileReader20 => r.readAheads
    case r: FileReader21 => r.readAheads
  }

  /** The file's bytes, and the file column of each field id. */
  private def write(version: String, schema: LanceSchema, batches: Seq[Seq[FieldVector]], maxPageBytes: Long): (Array[Byte], Int => Int) =
    if (version == "2.0") {
      val out = new java.io.ByteArrayOutputStream
      val w = new FileWriter20(out, schema, maxPageBytes)
      batches.foreach(w.write)
      val r = w.finish()
      (out.toByteArray, r.fieldIds.zip(r.columnIndices).toMap)
    } else {
      val (bytes, r) = Writer21Fixtures.write(schema, batches, version.last.asDigit, maxPageBytes)
      (bytes, r.fieldIds.zip(r.columnIndices).toMap)
    }

  /** Random batches; 2.0 files have no null structs. */
  private def batchesFor(version: String, schema: LanceSchema, sizes: Seq[Int], seed: Long, nullRate: Double, a: BufferAllocator,
      long: Boolean): Seq[Seq[FieldVector]] =
    if (version != "2.0") batches(schema, sizes, seed, nullRate, a, long = long)
    else {
      val gen = new sparklance.format.file.v2_0.RandomVectors(seed, nullRate)
      val rnd = new Random(seed)
      sizes.map(n => schema.fields.map { f =>
        val v = gen.vector(f, n, a)
        if (long) longStrings(v, rnd, 200, 700)
        v
      })
    }

  /** A scan's requests: mostly the next rows, sometimes rows further on (deleted rows skipped), sometimes from the start again. */
  private def requests(rnd: Random, n: Int, maxLen: Int): Seq[(Int, Int, Long)] = {
    val out = Seq.newBuilder[(Int, Int, Long)]
    var row = 0
    var restarts = 0
    while (row < n) {
      val len = math.min(n - row, 1 + rnd.nextInt(maxLen))
      val maxBytes = if (rnd.nextInt(4) == 0) 1L + rnd.nextInt(50000) else Long.MaxValue
      out += ((row, len, maxBytes))
      row += len
      if (rnd.nextInt(8) == 0) row += rnd.nextInt(maxLen * 3)
      if (restarts < 1 && rnd.nextInt(40) == 0) { row = rnd.nextInt(math.max(1, row)); restarts += 1 }
    }
    out.result()
  }

  /** Every field read with `requests` from `r`, as canonical strings per request (the values read, as many as it gave). */
  private def readAll(r: DataFileReader, schema: LanceSchema, columnOf: Int => Int, reqs: Seq[(Int, Int, Long)],
      a: BufferAllocator): Seq[Seq[String]] =
    reqs.flatMap { case (start, len, maxBytes) =>
      schema.fields.map { f =>
        val v = r.read(f, columnOf, start, len, a, maxBytes)
        try (0 until v.getValueCount).map(Canon(v, _)) finally v.close()
      }
    }

  private val schemas: Seq[(String, LanceSchema, Boolean)] =
    Seq(("flat", flatSchema, false), ("nested", nestedSchema, false), ("long", longSchema, true))

  /** 2.0 writes fewer types than 2.1 (no null-typed columns, no packed layouts): those are left out of its files. */
  private def forVersion(version: String, schema: LanceSchema): LanceSchema =
    if (version != "2.0") schema
    else LanceSchema(schema.fields.filter(f => f.preOrder.forall(g => !g.arrowType.isInstanceOf[ArrowType.Null])))

  for (version <- Seq("2.0", "2.1", "2.2"); (name, full, long) <- schemas)
    test(s"$version $name: randomized ranged reads give the same values with reads ahead as without") {
      val schema = forVersion(version, full)
      val a = new RootAllocator()
      try {
        var served = 0L
        for (round <- 0 until 2) {
          val rnd = new Random(version.hashCode * 31L + name.hashCode + round)
          // Files well beyond the 64 KB tail the container reads at once, so that pages are read, and read ahead.
          val sizes = Seq.fill(1 + rnd.nextInt(2))(if (long) 150 + rnd.nextInt(300) else 2000 + rnd.nextInt(3000))
          val bs = batchesFor(version, schema, sizes, rnd.nextLong(), 0.2, a, long)
          val (bytes, columnOf) = try write(version, schema, bs, Seq(50000L, 8L << 20)(round)) finally bs.flatten.foreach(_.close())
          val reqs = requests(rnd, sizes.sum, if (long) 200 else 1500)
          // Pages of many reads: read-ahead sizes below a page's size (columns of a few thousand rows take a few KB), so that pages are read in several ranges.
          val readAhead = Seq(100, 1000, 5000)(rnd.nextInt(3))
          def scan(budget: Long): (Seq[Seq[String]], Long) = {
            val r = open(version, new File(bytes, readAhead, settle = true), budget)
            try (readAll(r, schema, columnOf, reqs, a), readAheads(r).map(_.servedReads).getOrElse(0L)) finally r.close()
          }
          val (without, none) = scan(0)
          val (withReadAhead, hits) = scan(ContainerReader.ReadAheadBudget)
          assert(none == 0)
          served += hits
          val bad = without.indices.find(i => without(i) != withReadAhead(i))
          assert(bad.isEmpty, s"round $round request ${bad.map(i => reqs(i / schema.fields.size))} field " +
            s"${bad.map(i => schema.fields(i % schema.fields.size).name)}: ${bad.map(withReadAhead)} != ${bad.map(without)}")
        }
        assert(served > 0, "no read took bytes read ahead")
        assert(a.getAllocatedMemory == 0, "vectors leaked")
      } finally a.close()
    }

  private val wide: LanceSchema = schemaOf(id => (0 until 40).map(i => LanceField(id(), s"s$i", ArrowType.Utf8.INSTANCE, nullable = true)) :+
    fsl(id(), "vec", f32, 128))

  for (version <- Seq("2.0", "2.2"))
    test(s"$version: the bytes read ahead stay within the budget, for wide tables and rows larger than it") {
      val a = new RootAllocator()
      try {
        val rnd = new Random(7)
        val bs = batchesFor(version, wide, Seq(3000), 11, 0.1, a, long = true)
        val (bytes, columnOf) = try write(version, wide, bs, 200000L) finally bs.flatten.foreach(_.close())
        val reqs = (0 until 3000 by 500).map(s => (s, 500, Long.MaxValue))
        val expected = { val r = open(version, new File(bytes, 64 << 10), 0); try readAll(r, wide, columnOf, reqs, a) finally r.close() }
        // 500 vectors (256 KB) are more than the budget: they are never read ahead, the strings are.
        val budget = 200L << 10
        val r = open(version, new File(bytes, 64 << 10), budget)
        try {
          val got = reqs.flatMap { req =>
            val out = readAll(r, wide, columnOf, Seq(req), a)
            val p = readAheads(r).get
            assert(p.heldBytes <= budget)
            out
          }
          assert(got == expected)
          val p = readAheads(r).get
          assert(p.peakBytes <= budget && p.peakBytes > 0 && p.servedReads > 0, s"peak ${p.peakBytes}, served ${p.servedReads}")
        } finally r.close()
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }

  for (version <- Seq("2.0", "2.2"))
    test(s"$version: a reader closed while a read ahead runs waits for it before closing its file, and holds nothing after") {
      val a = new RootAllocator()
      try {
        // Without nulls, vectors are read as plain values, and their next rows ahead.
        val bs = batchesFor(version, longSchema, Seq(400), 5, 0.0, a, long = true)
        val (bytes, columnOf) = try write(version, longSchema, bs, 50000L) finally bs.flatten.foreach(_.close())
        val file = new File(bytes, 4096)
        val r = open(version, file, ContainerReader.ReadAheadBudget)
        val vec = longSchema.fields.find(_.name == "vec").get
        file.gate = new CountDownLatch(1)
        // The first rows are read; the next ones are issued ahead, and held at the gate (a slow store).
        r.read(vec, columnOf, 0, 100, a, Long.MaxValue).close()
        val p = readAheads(r).get
        assert(p.pendingRanges > 0)
        // Let the reads go only once the closing thread waits for them: closing the file earlier is what must not happen.
        val closer = Thread.currentThread
        val opener = new Thread(() => {
          while (closer.getState != Thread.State.WAITING && closer.getState != Thread.State.TIMED_WAITING && file.gate.getCount > 0)
            Thread.onSpinWait()
          file.gate.countDown()
        })
        opener.start()
        r.close()
        file.gate.countDown()
        opener.join()
        assert(!file.closedDuringRead, "the file was closed under a read ahead")
        assert(p.pendingRanges == 0 && p.heldBytes == 0)
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }

  for (version <- Seq("2.0", "2.2"))
    test(s"$version: a failing read gives the error it gives without reads ahead; a failed read ahead alone changes nothing") {
      val a = new RootAllocator()
      try {
        val bs = batchesFor(version, longSchema, Seq(600), 9, 0.1, a, long = true)
        val (bytes, columnOf) = try write(version, longSchema, bs, 50000L) finally bs.flatten.foreach(_.close())
        val reqs = (0 until 600 by 50).map(s => (s, 50, Long.MaxValue))
        val at = bytes.length / 3L
        def failing(background: Boolean)(position: Long, len: Int, onBackground: Boolean): Boolean =
          (!background || onBackground) && position <= at && at < position + len
        def outcome(budget: Long, fail: (Long, Int, Boolean) => Boolean): Either[(Class[_], String), Seq[Seq[String]]] = {
          val r = open(version, new File(bytes, 4096, fail), budget)
          try Right(readAll(r, longSchema, columnOf, reqs, a))
          catch { case e: Exception => Left((e.getClass, e.getMessage)) }
          finally r.close()
        }
        val broken = outcome(0, failing(background = false))
        assert(broken.isLeft, "the injected failure was not hit")
        assert(outcome(ContainerReader.ReadAheadBudget, failing(background = false)) == broken)
        val clean = outcome(0, (_, _, _) => false)
        assert(clean.isRight)
        assert(outcome(ContainerReader.ReadAheadBudget, failing(background = true)) == clean)
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }
}
