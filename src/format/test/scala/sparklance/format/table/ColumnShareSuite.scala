package sparklance.format.table

import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/** The share of a row's bytes columns take, which decides between rewriting rows and columns. */
class ColumnShareSuite extends AnyFunSuite {
  private def field(name: String, t: ArrowType, kids: Field*) = new Field(name, FieldType.nullable(t), kids.asJava)
  private val schema = LanceSchema.fromArrow(new Schema(Seq(
    field("id", new ArrowType.Int(64, true)),
    field("vec", new ArrowType.FixedSizeList(128), field("item", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))),
    field("s", ArrowType.Utf8.INSTANCE),
    field("t", ArrowType.Utf8.INSTANCE)).asJava))

  test("fixed-width columns by their width, variable-width ones sharing the rest of the stored row") {
    // 8 + 512 fixed bytes; a 640-byte row leaves 60 bytes to each string.
    assert(ColumnShare.of(schema, Set("id"), 640) == 8.0 / 640)
    assert(ColumnShare.of(schema, Set("vec"), 640) == 512.0 / 640)
    assert(ColumnShare.of(schema, Set("s", "t"), 640) == 120.0 / 640)
    assert(ColumnShare.of(schema, schema.fields.map(_.name).toSet, 640) == 1.0)
    // Compressed rows smaller than the fixed widths still leave each string 8 bytes.
    assert(ColumnShare.of(schema, Set("s"), 100) == 8.0 / (520 + 16))
  }
}
