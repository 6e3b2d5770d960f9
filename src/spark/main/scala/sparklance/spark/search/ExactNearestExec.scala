package sparklance.spark.search

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, GenericInternalRow, JoinedRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy, UnaryExecNode}

/**
 * [[ExactNearestScan]] on executors: each task copies up to `blockRows` rows of its query side,
 * reads the table's vectors once for them ([[ExactNearestBlock]]: live rows only, those that pass
 * the filters), emits each query row with its hits, nearest first, and goes on with the next block.
 *
 * Memory per task: the block's rows, 8 bytes per item of the block's query vectors, k hits per
 * query (`blockRows` is chosen so that blockRows × k stays under about a million hits), and one
 * batch of the vector column as the scan reads it.
 */
final case class ExactNearestExec(query: Expression, ranking: NearestRanking, target: ProbeTarget, outer: Boolean,
    blockRows: Int, hit: Attribute, distance: Attribute, child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output :+ hit :+ distance

  override protected def doExecute(): RDD[InternalRow] = {
    val bound = BindReferences.bindReference(query, child.output)
    val types = output.map(_.dataType).toArray
    val (ranking, target, outer, blockRows) = (this.ranking, this.target, this.outer, this.blockRows)
    // Each task reads the whole table: a query side in fewer partitions than the cluster has
    // cores is spread round-robin over as many tasks (its rows shuffled, as unsafe rows).
    val input = child.execute()
    val parallelism = sparkContext.defaultParallelism
    val queries = if (input.getNumPartitions >= parallelism) input else {
      val schema = child.schema
      input.mapPartitions { rows =>
        val unsafe = UnsafeProjection.create(schema)
        rows.map(r => unsafe(r).copy(): InternalRow)
      }.repartition(parallelism)
    }
    queries.mapPartitions { rows =>
      lazy val opened = {
        val o = target.open()
        Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => o.close()))
        o
      }
      val project = UnsafeProjection.create(types)
      val joined = new JoinedRow
      rows.map(_.copy()).grouped(blockRows).flatMap { block =>
        val search = opened.search
        val answer = new ExactNearestBlock(ranking, search.dim, target.k, block.map(r => bound.eval(r).asInstanceOf[ArrayData]).toIndexedSeq)
        search.snapshot.fragments.foreach { f =>
          search.scanFragment(f.getId, id => target.allowed.forall(_.contains(id)), whole = true)(answer.offer)
        }
        block.iterator.zip(answer.result.iterator).flatMap { case (row, hits) =>
          if (hits.isEmpty && outer) Iterator.single(project(joined(row, new GenericInternalRow(2))))
          else hits.iterator.map(h => project(joined(row, new GenericInternalRow(Array[Any](h.rowId, h.distance)))))
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ExactNearestExec = copy(child = newChild)
}

/** Plans [[ExactNearestScan]]. */
object ExactNearestStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case s: ExactNearestScan => ExactNearestExec(s.query, s.ranking, s.target, s.outer, s.blockRows, s.hit, s.distance, planLater(s.child)) :: Nil
    case _ => Nil
  }
}
