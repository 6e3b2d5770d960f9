package sparklance.format.file

import org.apache.arrow.memory.RootAllocator
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.file.v2_1.{Canon, Corpus, MemFile, Writer21Fixtures}
import sparklance.format.io.InputFile

/**
 * A file whose version only its footer tells (an index file) is opened with one read of its tail,
 * which holds the footer and the metadata after it; its values read as through a reader told the
 * version.
 */
class FooterFirstOpenSuite extends AnyFunSuite {
  import Writer21Fixtures._

  private final class CountedFile(bytes: Array[Byte]) extends InputFile {
    private val file = new MemFile(bytes, "counted")
    val reads = scala.collection.mutable.ArrayBuffer.empty[(Long, Int)]
    def path: String = file.path
    def length: Long = file.length
    def read(position: Long, len: Int): Array[Byte] = { reads += position -> len; file.read(position, len) }
    def close(): Unit = ()
  }

  for (minor <- Seq(1, 2))
    test(s"a 2.$minor file of unknown version is opened with one read, and reads as one of known version") {
      val a = new RootAllocator()
      try {
        val bs = batches(flatSchema, Seq(300, 200), 7L * minor, 0.2, a)
        val (bytes, _) = try write(flatSchema, bs, minor) finally bs.flatten.foreach(_.close())
        val columnOf = Corpus.columnsOf(flatSchema.fields)
        val counted = new CountedFile(bytes)
        val opened = DataFileReader.open(counted)
        val told = DataFileReader.open(new MemFile(bytes, "told"), 2, minor)
        try {
          assert(opened.schema == told.schema)
          assert(counted.reads.size == 1, counted.reads)
          for (f <- flatSchema.fields) {
            val (x, y) = (opened.read(f, columnOf, 0, 500, a), told.read(f, columnOf, 0, 500, a))
            try assert((0 until 500).map(Canon(x, _)) == (0 until 500).map(Canon(y, _)), f.name)
            finally { x.close(); y.close() }
          }
        } finally { opened.close(); told.close() }
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }
}
