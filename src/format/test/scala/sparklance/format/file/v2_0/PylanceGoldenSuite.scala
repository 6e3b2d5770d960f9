package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * A file pylance 14.0.2 wrote with `LanceFileWriter(version="2.0")` from this pyarrow table
 * (50 rows, `mask = i % 7 == 0`):
 * {{{
 * i  int32         None if mask else i * 3        d  float64  i / 4
 * b  bool          None if mask else i % 3 == 0   s  string   None if mask else "x" * (i % 5)
 * ls list<int64>   None if i % 5 == 0 else list(range(i % 4))
 * st struct<a int16 = i, z large_string = f"v{i}">
 * v  fixed_size_list<float32, 2> = [2i, 2i + 1]   n  int64  all null
 * }}}
 * FileWriter20 must reproduce it byte for byte, and FileReader20 must read it back.
 */
class PylanceGoldenSuite extends AnyFunSuite {
  private val pylanceFile: Array[Byte] = java.util.Base64.getDecoder.decode(
      "fr/f7/f7AUhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISAAAAAADAAAABgAA" +
      "AAkAAAAMAAAADwAAABIAAAAAAAAAGAAAABsAAAAeAAAAIQAAACQAAAAnAAAAAAAAAC0AAAAwAAAAMwAAADYAAAA5AAAAPAAAAAAA" +
      "AABCAAAARQAAAEgAAABLAAAATgAAAFEAAAAAAAAAVwAAAFoAAABdAAAAYAAAAGMAAABmAAAAAAAAAGwAAABvAAAAcgAAAHUAAAB4" +
      "AAAAewAAAAAAAACBAAAAhAAAAIcAAACKAAAAjQAAAJAAAAAAAAAASEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhI" +
      "SEhISEhISEhISEhISEhISEhISEgAAAAAAAAAAAAAAAAAANA/AAAAAAAA4D8AAAAAAADoPwAAAAAAAPA/AAAAAAAA9D8AAAAAAAD4" +
      "PwAAAAAAAPw/AAAAAAAAAEAAAAAAAAACQAAAAAAAAARAAAAAAAAABkAAAAAAAAAIQAAAAAAAAApAAAAAAAAADEAAAAAAAAAOQAAA" +
      "AAAAABBAAAAAAAAAEUAAAAAAAAASQAAAAAAAABNAAAAAAAAAFEAAAAAAAAAVQAAAAAAAABZAAAAAAAAAF0AAAAAAAAAYQAAAAAAA" +
      "ABlAAAAAAAAAGkAAAAAAAAAbQAAAAAAAABxAAAAAAAAAHUAAAAAAAAAeQAAAAAAAAB9AAAAAAAAAIEAAAAAAAIAgQAAAAAAAACFA" +
      "AAAAAACAIUAAAAAAAAAiQAAAAAAAgCJAAAAAAAAAI0AAAAAAAIAjQAAAAAAAACRAAAAAAACAJEAAAAAAAAAlQAAAAAAAgCVAAAAA" +
      "AAAAJkAAAAAAAIAmQAAAAAAAACdAAAAAAACAJ0AAAAAAAAAoQAAAAAAAgChASEhISEhISEhISEhISEhISEhISEhISEhISEhISEhI" +
      "SEhISEhISEhISEhISEhISEhIfr/f7/f7AUhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhI" +
      "SEhISEhISEiSBEmSIAFISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhVAAAA" +
      "AAAAAAEAAAAAAAAAAwAAAAAAAAAGAAAAAAAAAAoAAAAAAAAACgAAAAAAAAALAAAAAAAAAGAAAAAAAAAADgAAAAAAAAASAAAAAAAA" +
      "ABIAAAAAAAAAEwAAAAAAAAAVAAAAAAAAABgAAAAAAAAAbQAAAAAAAAAYAAAAAAAAABkAAAAAAAAAGwAAAAAAAAAeAAAAAAAAACIA" +
      "AAAAAAAAIgAAAAAAAAB3AAAAAAAAACQAAAAAAAAAJwAAAAAAAAArAAAAAAAAACsAAAAAAAAALAAAAAAAAAAuAAAAAAAAAIMAAAAA" +
      "AAAAMgAAAAAAAAAyAAAAAAAAADMAAAAAAAAANQAAAAAAAAA4AAAAAAAAADwAAAAAAAAAkQAAAAAAAAA9AAAAAAAAAD8AAAAAAAAA" +
      "QgAAAAAAAABGAAAAAAAAAEYAAAAAAAAARwAAAAAAAACcAAAAAAAAAEoAAAAAAAAATgAAAAAAAABOAAAAAAAAAE8AAAAAAAAAUQAA" +
      "AAAAAABUAAAAAAAAAKkAAAAAAAAASEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhIeHh4eHh4" +
      "eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4" +
      "eHh4SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEg9AAAAAAAAAAEAAAAAAAAAAwAAAAAAAAAGAAAA" +
      "AAAAAAYAAAAAAAAAQwAAAAAAAAAIAAAAAAAAAAsAAAAAAAAACwAAAAAAAAAMAAAAAAAAAEkAAAAAAAAADwAAAAAAAAAPAAAAAAAA" +
      "ABAAAAAAAAAAEgAAAAAAAABPAAAAAAAAABIAAAAAAAAAEwAAAAAAAAAVAAAAAAAAABgAAAAAAAAAVQAAAAAAAAAZAAAAAAAAABsA" +
      "AAAAAAAAHgAAAAAAAAAeAAAAAAAAAFsAAAAAAAAAIAAAAAAAAAAjAAAAAAAAACMAAAAAAAAAJAAAAAAAAABhAAAAAAAAACcAAAAA" +
      "AAAAJwAAAAAAAAAoAAAAAAAAACoAAAAAAAAAZwAAAAAAAAAqAAAAAAAAACsAAAAAAAAALQAAAAAAAAAwAAAAAAAAAG0AAAAAAAAA" +
      "MQAAAAAAAAAzAAAAAAAAADYAAAAAAAAANgAAAAAAAABzAAAAAAAAADgAAAAAAAAAOwAAAAAAAAA7AAAAAAAAADwAAAAAAAAASEhI" +
      "SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhIAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAA" +
      "AAABAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB" +
      "AAAAAAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAA" +
      "AAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAABAAAAAAAA" +
      "AAAAAAAAAAAAAQAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEA" +
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAA" +
      "AAAAAAAAAAAAAAABAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAACAAAAAAAAAAAAAAAAAAAA" +
      "SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEgAAAEAAgADAAQABQAGAAcACAAJAAoACwAMAA0ADgAPABAAEQASABMAFAAV" +
      "ABYAFwAYABkAGgAbABwAHQAeAB8AIAAhACIAIwAkACUAJgAnACgAKQAqACsALAAtAC4ALwAwADEASEhISEhISEhISEhISEhISEhI" +
      "SEhISEhISEhISAIAAAAAAAAABAAAAAAAAAAGAAAAAAAAAAgAAAAAAAAACgAAAAAAAAAMAAAAAAAAAA4AAAAAAAAAEAAAAAAAAAAS" +
      "AAAAAAAAABQAAAAAAAAAFwAAAAAAAAAaAAAAAAAAAB0AAAAAAAAAIAAAAAAAAAAjAAAAAAAAACYAAAAAAAAAKQAAAAAAAAAsAAAA" +
      "AAAAAC8AAAAAAAAAMgAAAAAAAAA1AAAAAAAAADgAAAAAAAAAOwAAAAAAAAA+AAAAAAAAAEEAAAAAAAAARAAAAAAAAABHAAAAAAAA" +
      "AEoAAAAAAAAATQAAAAAAAABQAAAAAAAAAFMAAAAAAAAAVgAAAAAAAABZAAAAAAAAAFwAAAAAAAAAXwAAAAAAAABiAAAAAAAAAGUA" +
      "AAAAAAAAaAAAAAAAAABrAAAAAAAAAG4AAAAAAAAAcQAAAAAAAAB0AAAAAAAAAHcAAAAAAAAAegAAAAAAAAB9AAAAAAAAAIAAAAAA" +
      "AAAAgwAAAAAAAACGAAAAAAAAAIkAAAAAAAAAjAAAAAAAAABISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhI" +
      "SEhISEhISEh2MHYxdjJ2M3Y0djV2NnY3djh2OXYxMHYxMXYxMnYxM3YxNHYxNXYxNnYxN3YxOHYxOXYyMHYyMXYyMnYyM3YyNHYy" +
      "NXYyNnYyN3YyOHYyOXYzMHYzMXYzMnYzM3YzNHYzNXYzNnYzN3YzOHYzOXY0MHY0MXY0MnY0M3Y0NHY0NXY0NnY0N3Y0OHY0OUhI" +
      "SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEgAAAAAAACAPwAAAEAAAEBAAACAQAAAoEAA" +
      "AMBAAADgQAAAAEEAABBBAAAgQQAAMEEAAEBBAABQQQAAYEEAAHBBAACAQQAAiEEAAJBBAACYQQAAoEEAAKhBAACwQQAAuEEAAMBB" +
      "AADIQQAA0EEAANhBAADgQQAA6EEAAPBBAAD4QQAAAEIAAARCAAAIQgAADEIAABBCAAAUQgAAGEIAABxCAAAgQgAAJEIAAChCAAAs" +
      "QgAAMEIAADRCAAA4QgAAPEIAAEBCAABEQgAASEIAAExCAABQQgAAVEIAAFhCAABcQgAAYEIAAGRCAABoQgAAbEIAAHBCAAB0QgAA" +
      "eEIAAHxCAACAQgAAgkIAAIRCAACGQgAAiEIAAIpCAACMQgAAjkIAAJBCAACSQgAAlEIAAJZCAACYQgAAmkIAAJxCAACeQgAAoEIA" +
      "AKJCAACkQgAApkIAAKhCAACqQgAArEIAAK5CAACwQgAAskIAALRCAAC2QgAAuEIAALpCAAC8QgAAvkIAAMBCAADCQgAAxEIAAMZC" +
      "SEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhISEhICr8CChkSAWkg////////////ASoFaW50MzIw" +
      "ATgBChwSAWQYASD///////////8BKgZkb3VibGUwATgBChoSAWIYAiD///////////8BKgRib29sMAE4AQocEgFzGAMg////////" +
      "////ASoGc3RyaW5nMAE4AgobEgJscxgEIP///////////wEqBGxpc3QwATgBChUSBGl0ZW0YBSAEKgVpbnQ2NDABOAEKGxICc3QY" +
      "BiD///////////8BKgZzdHJ1Y3QwAQoSEgFhGAcgBioFaW50MTYwATgBChkSAXoYCCAGKgxsYXJnZV9zdHJpbmcwATgCCi0SAXYY" +
      "CSD///////////8BKhdmaXhlZF9zaXplX2xpc3Q6ZmxvYXQ6MjABOAEKGxIBbhgKIP///////////wEqBWludDY0MAE4ARAyCikS" +
      "JwolCh8vbGFuY2UuZW5jb2RpbmdzLkNvbHVtbkVuY29kaW5nEgIKABJJCgIAQBIDB8gBGDIiPBI6CjgKHi9sYW5jZS5lbmNvZGlu" +
      "Z3MuQXJyYXlFbmNvZGluZxIWEhQSEgoGCgQIARIAEggKBgggEgIIAQopEicKJQofL2xhbmNlLmVuY29kaW5ncy5Db2x1bW5FbmNv" +
      "ZGluZxICCgASPgoCwAISApADGDIiMhIwCi4KHi9sYW5jZS5lbmNvZGluZ3MuQXJyYXlFbmNvZGluZxIMEgoKCAoGCgQIQBIACikS" +
      "JwolCh8vbGFuY2UuZW5jb2RpbmdzLkNvbHVtbkVuY29kaW5nEgIKABJKCgSABsAGEgIHBxgyIjwSOgo4Ch4vbGFuY2UuZW5jb2Rp" +
      "bmdzLkFycmF5RW5jb2RpbmcSFhIUEhIKBgoECAESABIICgYIARICCAEKKRInCiUKHy9sYW5jZS5lbmNvZGluZ3MuQ29sdW1uRW5j" +
      "b2RpbmcSAgoAElEKBIAHwAoSA5ADVBgyIkISQAo+Ch4vbGFuY2UuZW5jb2RpbmdzLkFycmF5RW5jb2RpbmcSHDIaCgwSCgoICgYK" +
      "BAhAEgASCAoGCAgSAggBGFUKKRInCiUKHy9sYW5jZS5lbmNvZGluZ3MuQ29sdW1uRW5jb2RpbmcSAgoAEkYKAsALEgKQAxgyIjoS" +
      "OAo2Ch4vbGFuY2UuZW5jb2RpbmdzLkFycmF5RW5jb2RpbmcSFCISCgwSCgoICgYKBAhAEgAQPRg8CikSJwolCh8vbGFuY2UuZW5j" +
      "b2RpbmdzLkNvbHVtbkVuY29kaW5nEgIKABI+CgKADxIC4AMYPCIyEjAKLgoeL2xhbmNlLmVuY29kaW5ncy5BcnJheUVuY29kaW5n" +
      "EgwSCgoICgYKBAhAEgAKKRInCiUKHy9sYW5jZS5lbmNvZGluZ3MuQ29sdW1uRW5jb2RpbmcSAgoAEiwYMiIoEiYKJAoeL2xhbmNl" +
      "LmVuY29kaW5ncy5BcnJheUVuY29kaW5nEgIqAAopEicKJQofL2xhbmNlLmVuY29kaW5ncy5Db2x1bW5FbmNvZGluZxICCgASPQoC" +
      "gBMSAWQYMiIyEjAKLgoeL2xhbmNlLmVuY29kaW5ncy5BcnJheUVuY29kaW5nEgwSCgoICgYKBAgQEgAKKRInCiUKHy9sYW5jZS5l" +
      "bmNvZGluZ3MuQ29sdW1uRW5jb2RpbmcSAgoAElMKBIAUwBcSBJADjAEYMiJDEkEKPwoeL2xhbmNlLmVuY29kaW5ncy5BcnJheUVu" +
      "Y29kaW5nEh0yGwoMEgoKCAoGCgQIQBIAEggKBggIEgIIARiNAQopEicKJQofL2xhbmNlLmVuY29kaW5ncy5Db2x1bW5FbmNvZGlu" +
      "ZxICCgASSgoCgBkSApADGDIiPhI8CjoKHi9sYW5jZS5lbmNvZGluZ3MuQXJyYXlFbmNvZGluZxIYEhYKFAoSGhAIAhIMEgoKCAoG" +
      "CgQIIBIACikSJwolCh8vbGFuY2UuZW5jb2RpbmdzLkNvbHVtbkVuY29kaW5nEgIKABIuGDIiKhIoCiYKHi9sYW5jZS5lbmNvZGlu" +
      "Z3MuQXJyYXlFbmNvZGluZxIEEgIaAIQPAAAAAAAAdgAAAAAAAAD6DwAAAAAAAGsAAAAAAAAAZRAAAAAAAAB3AAAAAAAAANwQAAAA" +
      "AAAAfgAAAAAAAABaEQAAAAAAAHMAAAAAAAAAzREAAAAAAABrAAAAAAAAADgSAAAAAAAAWQAAAAAAAACREgAAAAAAAGoAAAAAAAAA" +
      "+xIAAAAAAACAAAAAAAAAAHsTAAAAAAAAdwAAAAAAAADyEwAAAAAAAFsAAAAAAAAAQA4AAAAAAABEAQAAAAAAAIQPAAAAAAAATRQA" +
      "AAAAAAD9FAAAAAAAAAEAAAALAAAAAAADAExBTkM=")

  private val n = 50
  private def mask(i: Int) = i % 7 == 0
  private val schema = {
    def f(id: Int, name: String, t: ArrowType, kids: LanceField*) = LanceField(id, name, t, nullable = true, kids)
    LanceSchema(Seq(
      f(0, "i", new ArrowType.Int(32, true)),
      f(1, "d", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
      f(2, "b", ArrowType.Bool.INSTANCE),
      f(3, "s", ArrowType.Utf8.INSTANCE),
      f(4, "ls", ArrowType.List.INSTANCE, f(5, "item", new ArrowType.Int(64, true))),
      f(6, "st", ArrowType.Struct.INSTANCE, f(7, "a", new ArrowType.Int(16, true)), f(8, "z", ArrowType.LargeUtf8.INSTANCE)),
      LanceField(9, "v", new ArrowType.FixedSizeList(2), nullable = true,
        arrowItemType = Some(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))),
      f(10, "n", new ArrowType.Int(64, true))))
  }

  private def vectors(a: RootAllocator): Seq[FieldVector] = {
    val vs = schema.fields.map(_.toArrow.createVector(a))
    val Seq(i: IntVector, d: Float8Vector, b: BitVector, s: VarCharVector, ls: ListVector, st: StructVector,
      v: FixedSizeListVector, nul: BigIntVector) = vs
    Seq(i, d, b, nul).foreach(_.allocateNew(n))
    s.allocateNew(); ls.allocateNew(); st.allocateNew(); v.allocateNew()
    val lsItems = ls.getDataVector.asInstanceOf[BigIntVector]
    val (a16, z) = (st.getChild("a").asInstanceOf[SmallIntVector], st.getChild("z").asInstanceOf[LargeVarCharVector])
    val vItems = v.getDataVector.asInstanceOf[Float4Vector]
    a16.allocateNew(n); z.allocateNew(); vItems.allocateNew(2 * n); lsItems.allocateNew()
    var items = 0
    for (k <- 0 until n) {
      if (mask(k)) { i.setNull(k); b.setNull(k); s.setNull(k) }
      else { i.set(k, k * 3); b.set(k, if (k % 3 == 0) 1 else 0); s.setSafe(k, ("x" * (k % 5)).getBytes("UTF-8")) }
      d.set(k, k / 4.0)
      if (k % 5 == 0) ls.setNull(k)
      else {
        ls.startNewValue(k)
        (0 until k % 4).foreach { j => lsItems.setSafe(items, j.toLong); items += 1 }
        ls.endValue(k, k % 4)
      }
      a16.set(k, k); z.setSafe(k, s"v$k".getBytes("UTF-8")); st.setIndexDefined(k)
      vItems.set(2 * k, 2f * k); vItems.set(2 * k + 1, 2f * k + 1); v.setNotNull(k)
      nul.setNull(k)
    }
    lsItems.setValueCount(items); a16.setValueCount(n); z.setValueCount(n); vItems.setValueCount(2 * n)
    vs.foreach(_.setValueCount(n))
    vs
  }

  test("FileWriter20 writes the bytes pylance wrote") {
    val a = new RootAllocator()
    try {
      val vs = vectors(a)
      try {
        val out = new ByteArrayOutputStream
        val w = new FileWriter20(out, schema)
        w.write(vs)
        w.finish()
        val ours = out.toByteArray
        assert(ours.length == pylanceFile.length)
        val firstDifference = ours.indices.find(k => ours(k) != pylanceFile(k))
        assert(firstDifference.isEmpty, s"first difference at byte ${firstDifference.getOrElse(-1)}")
      } finally vs.foreach(_.close())
    } finally a.close()
  }

  test("FileReader20 reads pylance's file") {
    val a = new RootAllocator()
    try {
      val r = new FileReader20(new BytesInputFile(pylanceFile))
      assert(r.schema == schema && r.numRows == n)
      val vs = vectors(a)
      try schema.fields.zip(vs).foreach { case (f, expected) =>
        val got = r.read(f, schema.allFields.map(_.id).indexOf(_), 0, n, a)
        try assert(Rows(got) == Rows(expected), f.name) finally got.close()
      } finally vs.foreach(_.close())
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }
}
