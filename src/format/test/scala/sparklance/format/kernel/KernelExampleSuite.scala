package sparklance.format.kernel

import java.nio.file.{Files, Paths}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, VarCharVector}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Using
import sparklance.format.Pylance
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

/**
 * The example of the format module on its own (no Spark) in docs/format-library.md: it runs, leaves the table
 * pylance reads, and is on that page word for word.
 */
class KernelExampleSuite extends AnyFunSuite {
  private val source = Paths.get("src/format/test/scala/sparklance/format/kernel/KernelExample.scala")

  test("the kernel example creates, appends, scans and deletes; our reader and pylance agree") {
    val path = Files.createTempDirectory("kernel").resolve("people.lance").toString
    KernelExample.run(path)
    val table = new Dataset(LocalStorage, path)
    assert(table.versions == Seq(1L, 2L, 3L))
    val rows = Using.resource(new RootAllocator()) { allocator =>
      table.snapshot().plan().flatMap { fragment =>
        Using.resource(fragment.open(table.storage, allocator)) { batches =>
          batches.flatMap { batch =>
            try {
              val (ids, names) = (batch.vectors(0).asInstanceOf[BigIntVector], batch.vectors(1).asInstanceOf[VarCharVector])
              (0 until batch.numRows).map(i => ids.get(i) -> names.getObject(i).toString)
            } finally batch.close()
          }.toList
        }
      }
    }
    assert(rows.sorted == Seq(1L -> "Ada", 2L -> "Grace"))
    val script = Files.createTempFile("kernel", ".py")
    Files.writeString(script,
      """import sys, lance
        |ds = lance.dataset(sys.argv[1])
        |t = ds.to_table().sort_by("id")
        |print(ds.version, t.column("id").to_pylist(), t.column("name").to_pylist())
        |""".stripMargin)
    assert(Pylance.run(script, path).trim.linesIterator.toSeq.last == "3 [1, 2] ['Ada', 'Grace']")
  }

  test("docs/format-library.md shows the example as it is compiled here") {
    val lines = Files.readAllLines(source).toArray(Array.empty[String]).toSeq
    val example = lines.dropWhile(!_.contains("docs example: begin")).tail.takeWhile(!_.contains("docs example: end"))
    val readme = new String(Files.readAllBytes(Paths.get("docs/format-library.md")), "UTF-8")
    assert(example.size > 20 && readme.contains(example.mkString("\n")),
      s"docs/format-library.md must contain the code of $source between its docs example markers")
  }
}
