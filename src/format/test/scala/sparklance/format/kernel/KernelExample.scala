package sparklance.format.kernel

// docs example: begin
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, VarCharVector}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.util.Using
import sparklance.format.commit.{Committer, Operation, RowLevelCommit}
import sparklance.format.io.LocalStorage
import sparklance.format.table.{Dataset, LanceSchema}

object KernelExample {
  /** Creates a table at `path`, appends three rows, finds one by a scan and deletes it. */
  def run(path: String): Unit = Using.resource(new RootAllocator()) { allocator =>
    val table = new Dataset(LocalStorage, path)
    table.create(LanceSchema.fromArrow(new Schema(java.util.List.of(    // version 1, no rows
      new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
      new Field("name", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)))))

    val v1 = table.snapshot()                                           // append Arrow vectors: version 2
    Using.resources(table.newWriter(v1, allocator), new BigIntVector("id", allocator),
        new VarCharVector("name", allocator)) { (writer, ids, names) =>
      for ((name, i) <- Seq("Ada", "Grace", "Linus").zipWithIndex) {
        ids.setSafe(i, i + 1L); names.setSafe(i, name.getBytes(UTF_8))
      }
      ids.setValueCount(3); names.setValueCount(3)
      writer.write(Seq(ids, names))                                     // vectors in schema order
      new Committer(table).commit(Some(v1), Operation.Append(writer.finish()))
    }

    val v2 = table.snapshot(Some(2L))                                   // read a projection of version 2
    val linus = v2.plan(Seq("name")).flatMap { fragment =>
      Using.resource(fragment.open(table.storage, allocator)) { batches =>
        batches.flatMap { batch =>
          try {
            val names = batch.vectors.head.asInstanceOf[VarCharVector]
            (0 until batch.numRows).filter(i => names.getObject(i).toString == "Linus").map(fragment.rowAddress(batch, _))
          } finally batch.close()
        }.toList
      }
    }
    new RowLevelCommit(table, v2).delete(linus.head)                    // version 3, checked against
      .commit(RowLevelCommit.Kind.Delete)                               // concurrent commits
  }
}
// docs example: end
