package sparklance.format.file

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.{BaseLargeVariableWidthVector, BaseVariableWidthVector, ValueVector}
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.file.v2_1.{Canon, Writer21Fixtures}
import sparklance.format.table.LanceField

/**
 * Rows copied in runs hold the values of the rows chosen, for every kind of vector the readers
 * make (flat, nested, maps, long values, NULLs), with offsets of their own. (Arrow's copy value
 * by value is no oracle: it refuses a large list inside a list.)
 */
class RowSelectionSuite extends AnyFunSuite {
  import Writer21Fixtures._

  /**
   * Offsets start at 0 and ascend, and a list's items are as many as its last offset says, down
   * every child (Arrow's own validator refuses half floats and fixed-size lists).
   */
  private def offsetsHold(v: ValueVector, what: String): Unit = {
    val n = v.getValueCount
    def ascending(offset: Int => Long, items: Long): Unit = {
      assert(n == 0 || offset(0) == 0, what)
      assert((0 until n).forall(i => offset(i) <= offset(i + 1)), what)
      assert(n == 0 || offset(n) == items, what)
    }
    v match {
      case s: BaseVariableWidthVector => ascending(i => s.getOffsetBuffer.getInt(i * 4L), if (n == 0) 0 else s.getOffsetBuffer.getInt(n * 4L))
      case s: BaseLargeVariableWidthVector => ascending(i => s.getOffsetBuffer.getLong(i * 8L), if (n == 0) 0 else s.getOffsetBuffer.getLong(n * 8L))
      case l: ListVector => ascending(i => l.getOffsetBuffer.getInt(i * 4L), l.getDataVector.getValueCount); offsetsHold(l.getDataVector, what)
      case l: LargeListVector => ascending(i => l.getOffsetBuffer.getLong(i * 8L), l.getDataVector.getValueCount); offsetsHold(l.getDataVector, what)
      case l: FixedSizeListVector => assert(l.getDataVector.getValueCount == n * l.getListSize, what); offsetsHold(l.getDataVector, what)
      case s: StructVector => s.getChildrenFromFields.asScala.foreach { c => assert(c.getValueCount == n, what); offsetsHold(c, what) }
      case _ =>
    }
  }

  /** Selections of several shapes from `rows` rows: long runs, single rows, none, all, a random share. */
  private def selections(rows: Int, rnd: Random): Seq[(String, Array[Int])] = Seq(
    "all" -> Array.range(0, rows),
    "none" -> Array.emptyIntArray,
    "first" -> Array(0),
    "last" -> Array(rows - 1),
    "every other" -> Array.range(0, rows, 2),
    "all but every 100th" -> Array.range(0, rows).filter(_ % 100 != 37),
    "random runs" -> {
      val b = Array.newBuilder[Int]
      var at = 0
      while (at < rows) { val run = 1 + rnd.nextInt(40); if (rnd.nextBoolean()) b ++= (at until math.min(rows, at + run)); at += run }
      b.result()
    },
    s"random ${rnd.nextInt(100)}%" -> { val p = rnd.nextDouble(); Array.range(0, rows).filter(_ => rnd.nextDouble() < p) })

  // Maps are lists of entry structs (2.2 tables store them).
  private val mapSchema = schemaOf { id =>
    def f(name: String, t: ArrowType, nullable: Boolean, kids: LanceField*) = LanceField(id(), name, t, nullable, kids)
    Seq(f("m", new ArrowType.Map(false), true, f("entries", ArrowType.Struct.INSTANCE, false,
      f("key", ArrowType.Utf8.INSTANCE, false), f("value", new ArrowType.Int(64, true), true))))
  }

  for ((name, schema, long) <- Seq(("flat", flatSchema, false), ("nested", nestedSchema, false), ("long values", longSchema, true),
    ("map", mapSchema, false)))
    test(s"$name vectors: rows copied in runs hold the values of the rows chosen") {
      val a = new RootAllocator()
      try {
        val rnd = new Random(name.hashCode)
        for (round <- 0 until 4) {
          val rows = 1 + rnd.nextInt(if (long) 300 else 3000)
          val vectors = batches(schema, Seq(rows), round * 31L + name.length, Seq(0.0, 0.1, 0.5, 1.0)(round), a, long = long).head
          try for ((shape, chosen) <- selections(rows, rnd); v <- vectors) {
            val copy = RowSelection.copy(v, chosen, chosen.length, a)
            try {
              val what = s"${v.getField.getName}, $shape of $rows rows, round $round"
              assert(copy.getValueCount == chosen.length, what)
              assert(copy.getNullCount == chosen.count(v.isNull), what)
              assert((0 until chosen.length).map(Canon(copy, _)) == chosen.toSeq.map(Canon(v, _)), what)
              offsetsHold(copy, what)
            } finally copy.close()
          } finally vectors.foreach(_.close())
        }
      } finally a.close()
    }

  test("rows must ascend and lie in the vector") {
    val a = new RootAllocator()
    try {
      val v = batches(flatSchema, Seq(10), 1L, 0.0, a).head
      try {
        intercept[IllegalArgumentException](RowSelection.copy(v.head, Array(3, 2), 2, a))
        intercept[IllegalArgumentException](RowSelection.copy(v.head, Array(3, 3), 2, a))
        intercept[IllegalArgumentException](RowSelection.copy(v.head, Array(9, 10), 2, a))
        intercept[IllegalArgumentException](RowSelection.copy(v.head, Array(-1, 2), 2, a))
        intercept[IllegalArgumentException](RowSelection.copy(v.head, RowSelection.Runs.of(Array(Int.MaxValue - 1), Array(3), 1), a))
        intercept[IllegalArgumentException](RowSelection.Runs.of(Array(0, 2), Array(3, 1), 2))
        intercept[IllegalArgumentException](RowSelection.Runs.of(Array(0, 5), Array(3, 0), 2))
        intercept[IllegalArgumentException](RowSelection.Runs.of(Array(-1), Array(3), 1))
        assert(RowSelection.Runs.of(Array(0, 3), Array(3, 2), 2).rows == 5)
      } finally v.foreach(_.close())
    } finally a.close()
  }
}
