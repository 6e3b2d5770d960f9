package sparklance.format.index.scalar

import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.VarBinaryVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.jdk.CollectionConverters._
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.io.Storage
import sparklance.format.skipping.{BitmapSegment, ZoneValue, ZoneValues}
import sparklance.format.table.LanceSchema

/**
 * Writes `bitmap_page_lookup.lance`, the one file of a BITMAP or LABEL_LIST segment
 * (docs/format-scalar-indices.md): `keys` of the indexed values' type (the null key first), and
 * `bitmaps`, each a [[RowAddressTreemap]] of the rows holding the key; schema metadata
 * `lance:index_stats = {"num_bitmaps": n}`. A LABEL_LIST also records the rows whose list itself is
 * null: a treemap in global buffer 1, named by `lance:label_list_nulls = "1"`.
 */
object BitmapIndexFile {
  private val RowsPerWrite = 4096

  /** Writes the file into segment directory `uuid`; returns its size. `entries` are sorted by key. */
  def write(storage: Storage, tablePath: String, uuid: UUID, keyType: ArrowType, entries: Seq[(Option[ZoneValue], Array[Byte])],
      listNulls: Option[Array[Byte]], allocator: BufferAllocator): Long = {
    val arrow = new Schema(Seq(new Field("keys", new FieldType(true, keyType, null), null),
      new Field("bitmaps", new FieldType(true, ArrowType.Binary.INSTANCE, null), null)).asJava)
    val metadata = Map("lance:index_stats" -> s"""{"num_bitmaps":${entries.size}}""") ++
      listNulls.map(_ => "lance:label_list_nulls" -> "1")
    val schema = LanceSchema.fromArrow(arrow).copy(metadata = metadata.map { case (k, v) => k -> v.getBytes(UTF_8) })
    val dir = Storage.join(tablePath, s"_indices/$uuid")
    val writer = new FileWriter21(storage.create(Storage.join(dir, BitmapSegment.LookupFile)), schema, minor = 2)
    entries.grouped(RowsPerWrite).foreach { chunk =>
      writer.writeRows(arrow, chunk.size, allocator) { case Seq(keys, bitmaps: VarBinaryVector) =>
        chunk.zipWithIndex.foreach { case ((key, bitmap), i) => ZoneValues.set(keys, i, key); bitmaps.setSafe(i, bitmap) }
      }
    }
    writer.finish(listNulls.toSeq).sizeBytes
  }
}
