package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.LanceCatalog
import sparklance.spark.indexing.TableIndexes

/**
 * `CALL lance.system.optimize_index(table => 'db.t', index_names => array('emb_idx'),
 * num_indices_to_merge => 0, retrain => false)`: pylance's `optimize_indices` for IVF vector
 * indices (see [[TableIndexes.optimize]]): the fragments an index does not cover yet are encoded by
 * Spark tasks with the index's own model into a delta segment, or merged with its newest
 * `num_indices_to_merge` segments into one, or, with `retrain`, the index is trained again. Every
 * index changed is committed in one CreateIndex; nothing is committed when all are up to date.
 * `name` names one index; without names every vector index of the table is optimized.
 * BTREE, BITMAP and LABEL_LIST indices are extended the same way, their segments written from the
 * rows as CREATE INDEX writes them (`retrain` rebuilds every segment into one); see
 * [[sparklance.spark.indexing.ScalarIndexBuild.optimize]]. INVERTED indices get a delta or a merge
 * as pylance 14.0.2 gives them (num_indices_to_merge absent: 1); see
 * [[sparklance.spark.indexing.InvertedIndexJob.optimize]].
 */
final class OptimizeIndexProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = OptimizeIndexProcedure.Name
  override def description(): String = "Adds the fragments a vector, BTREE, BITMAP, LABEL_LIST or INVERTED index does not cover to it (a delta or a merge), or retrains it"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("name", StringType), param("index_names", ArrayType(StringType)),
      param("num_indices_to_merge", LongType), param("retrain", BooleanType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("indices", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("fragments_indexed", LongType, nullable = false),
    StructField("segments_added", LongType, nullable = false),
    StructField("segments_removed", LongType, nullable = false),
    StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val where = s"Procedure optimize_index of ${target.quotedName}"
    val names = (optional(args, 1)(args.getUTF8String).map(_.toString).toSeq ++
      optional(args, 2)(args.getArray).toSeq.flatMap(a => (0 until a.numElements()).map(a.getUTF8String(_).toString))).distinct
    val merge = optional(args, 3)(args.getLong).map { n =>
      if (n < 0 || n > Int.MaxValue) throw new IllegalArgumentException(s"$where: num_indices_to_merge must be 0 or more, got $n")
      n.toInt
    }
    val retrain = optional(args, 4)(args.getBoolean).getOrElse(false)
    if (retrain && merge.isDefined) throw new IllegalArgumentException(
      s"$where: retrain rebuilds every segment of an index; num_indices_to_merge does not apply with it")
    val done = new TableIndexes(target.quotedName, target.dataset, catalog.settingsForTasks).optimize(spark, names, merge, retrain, where)
    InternalRow(new GenericArrayData(done.indices.map(UTF8String.fromString).toArray[AnyRef]), done.fragments, done.added, done.removed,
      done.version)
  }
}

object OptimizeIndexProcedure {
  val Name = "optimize_index"
}
