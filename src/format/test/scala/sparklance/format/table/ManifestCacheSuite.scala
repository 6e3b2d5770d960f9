package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage

/** Decoded manifests are kept for the next read (see Dataset.load), but never stand in for other bytes. */
class ManifestCacheSuite extends AnyFunSuite {
  private def schema(column: String) = LanceSchema.fromArrow(new Schema(java.util.List.of(
    new Field(column, FieldType.nullable(new ArrowType.Int(64, true)), null))))

  test("a version read twice is decoded once; a table made again at the same path is read anew") {
    val path = Files.createTempDirectory("manifest-cache").resolve("t.lance").toString
    val table = new Dataset(LocalStorage, path)
    table.create(schema("a"))
    val first = table.snapshot()
    val size = table.listing().manifestSize(1)
    assert(table.snapshot().file eq first.file)

    // Dropped and created again: version 1 again, a manifest of the same length, other contents.
    // The manifest's timestamp is a varint, so its length varies by a byte or two from one
    // creation to the next: created again until the lengths agree (most creations do).
    def recreate(): Long = {
      LocalStorage.deleteRecursively(path)
      new Dataset(LocalStorage, path).create(schema("b"))
      new Dataset(LocalStorage, path).listing().manifestSize(1).get
    }
    assert(Iterator.continually(recreate()).take(50).contains(size.get), "the case needs manifests of one length")
    val again = new Dataset(LocalStorage, path).snapshot()
    assert(again.version == 1)
    assert(again.schema.fields.map(_.name) == Seq("b"))
  }
}
