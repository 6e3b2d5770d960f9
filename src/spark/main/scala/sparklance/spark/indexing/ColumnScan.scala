package sparklance.spark.indexing

import org.apache.arrow.vector.FieldVector
import scala.util.Using
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{BasePaths, FragmentScanner, LanceField, LanceSchema}
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

/** The live rows of one column of one fragment, as an index build's Spark task reads them. */
object ColumnScan {
  /** A Lance field as it travels to tasks: its protobuf form (Arrow types are not serializable). */
  def proto(field: LanceField): Seq[Array[Byte]] = LanceSchema(Seq(field)).toProto.map(_.toByteArray)

  /**
   * Every live row of `fragment`'s column `fieldBytes` (see [[proto]]) at offsets `start` until
   * `end` (default: all): its vector, its index in it, its offset.
   */
  def foreach(files: BasePaths, storageConf: Map[String, String], fragment: DataFragment, fieldBytes: Seq[Array[Byte]],
      start: Long = 0L, end: Long = -1L)(each: (FieldVector, Int, Int) => Unit): Unit =
    foreachBatch(files, storageConf, fragment, fieldBytes, start, end) { (vector, numRows, offsets) =>
      var i = 0
      while (i < numRows) { each(vector, i, offsets(i)); i += 1 }
    }

  /**
   * [[foreach]] a batch at a time: its vector, its row count and each row's offset. A caller
   * looping over the rows itself boxes no row index or offset (a Function3 of Ints boxes them).
   */
  def foreachBatch(files: BasePaths, storageConf: Map[String, String], fragment: DataFragment, fieldBytes: Seq[Array[Byte]],
      start: Long, end: Long)(each: (FieldVector, Int, Array[Int]) => Unit): Unit = {
    val field = LanceSchema.fromProto(fieldBytes.map(FileProtos.Field.parseFrom), java.util.Map.of()).fields.head
    val storage = Storages.forPath(files.tablePath, storageConf)
    Using.resource(Allocators.child(s"index ${field.name} of ${files.tablePath} fragment ${fragment.getId}")) { allocator =>
      Using.resource(new FragmentScanner(storage, files, fragment, Seq(field), allocator, start,
          if (end < 0) fragment.getPhysicalRows else end)) { scanner =>
        scanner.foreach { batch =>
          try each(batch.vectors.head, batch.numRows, batch.offsets)
          finally batch.close()
        }
      }
    }
  }
}
