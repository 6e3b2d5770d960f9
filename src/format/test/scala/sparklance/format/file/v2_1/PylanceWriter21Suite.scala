package sparklance.format.file.v2_1

import java.io.FileOutputStream
import java.nio.file.{Files, Path}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.ipc.ArrowFileWriter
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.Pylance
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.io.LocalStorage
import sparklance.format.table.{Dataset, FragmentWriter, LanceSchema, StorageVersion}

/**
 * Files and datasets written by FileWriter21 (2.1 and 2.2) read by pylance 14: LanceFileReader,
 * dataset scan, take and projection must give back exactly the rows written. The expected rows go
 * to Arrow IPC files next to the Lance files; check_pylance.py compares. Needs the project's
 * virtual environment (see [[sparklance.format.Pylance]]).
 */
class PylanceWriter21Suite extends AnyFunSuite {
  import Writer21Fixtures._

  /** Replaces NaN and infinite floats, whose bits pylance and Arrow need not keep, by 1.5. */
  private def sanitize(v: ValueVector): Unit = v match {
    case f: Float2Vector => (0 until f.getValueCount).foreach(i => if (!f.isNull(i) && (f.get(i) & 0x7c00) == 0x7c00) f.set(i, 0x3e00.toShort))
    case f: Float4Vector => (0 until f.getValueCount).foreach(i => if (!f.isNull(i) && !java.lang.Float.isFinite(f.get(i))) f.set(i, 1.5f))
    case f: Float8Vector => (0 until f.getValueCount).foreach(i => if (!f.isNull(i) && !java.lang.Double.isFinite(f.get(i))) f.set(i, 1.5))
    case s: VarCharVector => ascii(s.getDataBuffer, s.getOffsetBuffer.getInt(4L * s.getValueCount).toLong)
    case s: LargeVarCharVector => ascii(s.getDataBuffer, s.getOffsetBuffer.getLong(8L * s.getValueCount))
    case l: FixedSizeListVector => sanitize(l.getDataVector)
    case l: ListVector => sanitize(l.getDataVector)
    case l: LargeListVector => sanitize(l.getDataVector)
    case s: StructVector => s.getChildrenFromFields.asScala.foreach(sanitize)
    case _ =>
  }

  /** Random bytes are no UTF-8, which pylance checks: strings become letters. */
  private def ascii(data: org.apache.arrow.memory.ArrowBuf, n: Long): Unit =
    (0L until n).foreach(i => data.setByte(i, 'a' + (data.getByte(i) & 15)))

  private def writeIpc(file: Path, vectors: Seq[FieldVector]): Unit = {
    val root = new VectorSchemaRoot(vectors.map(_.getField).asJava, vectors.asJava, vectors.head.getValueCount)
    val out = new FileOutputStream(file.toFile)
    try {
      val w = new ArrowFileWriter(root, null, out.getChannel)
      w.start(); w.writeBatch(); w.end(); w.close()
    } finally out.close()
  }

  test("pylance 14 reads 2.1 and 2.2 files and datasets written by FileWriter21") {
    Pylance.pythonOrCancel()
    val dir = Files.createTempDirectory("writer21-pylance")
    val cases = ArrayBuffer.empty[String]
    val a = new RootAllocator()
    try {
      val specs: Seq[(String, LanceSchema, Seq[Int], Double, Boolean, Boolean)] = Seq(
        ("flat_nulls", flatSchema, Seq(2500, 1, 2600), 0.3, false, false),
        ("flat_valid", flatSchema, Seq(3000), 0.0, false, false),
        ("flat_allnull", flatSchema, Seq(40, 60), 1.0, false, false),
        ("flat_packed", flatSchema, Seq(4000, 3100), 0.1, false, true),
        ("nested_nulls", nestedSchema, Seq(2000, 2100), 0.3, false, false),
        ("nested_valid", nestedSchema, Seq(1500), 0.0, false, false),
        ("nested_packed", nestedSchema, Seq(4000), 0.1, false, true),
        ("long", longSchema, Seq(300, 200), 0.2, true, false),
        ("runs", runsSchema, Nil, 0, false, false),
        ("flat_const", flatSchema, Seq(3000, 50), 0.2, false, false),
        ("nested_const", nestedSchema, Seq(3000), 0.2, false, false),
        ("empty", nestedSchema, Seq(0), 0.0, false, false),
        ("nested_struct_nulls", nestedSchema, Seq(1500), 0.0, false, false),
        ("long_struct_nulls", longSchema, Seq(300), 0.0, true, false))
      for (((name, schema, sizes, rate, long, small), k) <- specs.zipWithIndex; minor <- Seq(1, 2)) {
        val label = s"${name}_2.$minor"
        val bs = if (name == "runs") Seq(runs(20000, a))
          else batches(schema, sizes, 100L + k, rate, a, long, small, const = name.endsWith("_const"),
            nullEveryThirdStruct = name.endsWith("_struct_nulls"))
        try {
          bs.flatten.foreach(sanitize)
          val expected = bs.zipWithIndex.map { case (b, i) =>
            val f = s"$label.$i.arrow"; writeIpc(dir.resolve(f), b); f
          }.mkString(",")
          // A file with several pages per column.
          val (bytes, _) = write(schema, bs, minor, maxPageBytes = 30000)
          Files.write(dir.resolve(s"$label.lance"), bytes)
          cases += s"$label\tfile\t$label.lance\t$expected"
          // A dataset of several fragments.
          val table = dir.resolve(s"$label.ds.lance").toString
          val fw = new FragmentWriter(LocalStorage, table, schema, StorageVersion.parse(s"2.$minor").get, a, maxRowsPerFile = 1700)
          val frags = try { bs.foreach(fw.write); fw.finish() } finally fw.close()
          new Committer(new Dataset(LocalStorage, table))
            .commit(None, Operation.Overwrite(frags, schema, Map(Committer.StorageVersionKey -> s"2.$minor")))
          cases += s"$label (dataset)\tdataset\t$label.ds.lance\t$expected"
        } finally bs.flatten.foreach(_.close())
      }
      Files.write(dir.resolve("cases.txt"), cases.mkString("", "\n", "\n").getBytes("UTF-8"))
      val script = dir.resolve("check_pylance.py")
      val in = getClass.getResourceAsStream("/writer21/check_pylance.py")
      try Files.write(script, in.readAllBytes()) finally in.close()
      val output = Pylance.run(script, dir.toString)
      assert(output.contains(s"checked ${cases.size} of ${cases.size} cases"), output)
    } finally { a.close(); sparklance.format.io.LocalStorage.deleteRecursively(dir.toString) }
  }
}
