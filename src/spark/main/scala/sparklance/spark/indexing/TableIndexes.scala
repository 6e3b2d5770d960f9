package sparklance.spark.indexing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.IndexAlreadyExistsException
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.commit.{CommitRecord, Committer, Operation, Statement}
import sparklance.format.index.{IndexKind, Indices}
import sparklance.format.index.scalar.ScalarIndexType
import sparklance.format.index.vector.VectorIndexSegment
import sparklance.format.index.vector.build.{VectorIndexBuild, VectorIndexOptimize}
import sparklance.format.skipping.{ZoneMapSegment, ZoneValues}
import sparklance.format.table.{Dataset, LanceField, Snapshot}
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.spark.{Allocators, CatalogSettings}
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}

/**
 * Builds, optimizes, drops and lists the indices of one table, for every statement that does: the
 * create_index, optimize_index and drop_index procedures and CREATE / DROP INDEX (see [[sparklance.spark.LanceTable]]).
 * `quotedName` names the table in errors.
 */
final class TableIndexes(quotedName: String, dataset: Dataset, settings: CatalogSettings) {

  /**
   * Builds `request` over every live row of the newest version and commits it as a Lance
   * CreateIndex pylance uses as its own. An index of the same name and kind on the same column is
   * replaced when `replace`; otherwise it is an IndexAlreadyExistsException. `where` begins errors.
   */
  def create(spark: SparkSession, asked: IndexRequest, replace: Boolean, where: String, nameGiven: Boolean = true): TableIndexes.Built = {
    val read = dataset.snapshot(forWrite = true)
    val field = read.schema.field(asked.column).getOrElse(throw LanceErrors(LanceErrorCondition.ColumnNotFound, Map("message" ->
      s"$where: no top-level column '${asked.column}' (columns: ${read.schema.fields.map(_.name).mkString(", ")})",
      "table" -> quotedName, "column" -> asked.column)))
    val existing = indices(read)
    // pylance's default name, `<column>_idx`, is often the zone map's a catalog table starts with: an
    // index of another kind asked for without a name takes `<column>_<kind>_idx` then.
    val taken = existing.filter(_.getName == asked.name)
    val request =
      if (nameGiven || taken.forall(i => typeName(i) == asked.typeName && i.getFieldsList.asScala.map(_.intValue) == Seq(field.id))) asked
      else asked.named(s"${asked.column}_${asked.typeName.toLowerCase(java.util.Locale.ROOT)}_idx")
    if (!replace && existing.exists(_.getName == request.name)) throw new IndexAlreadyExistsException(request.name, quotedName, None)
    request match {
      case v: IndexRequest.Vector => vector(spark, read, field, v, existing, where)
      case z: IndexRequest.ZoneMap => zoneMap(spark, read, field, z, existing, where)
      case s: IndexRequest.Scalar => scalar(spark, read, field, s, existing, where)
      case i: IndexRequest.Inverted => inverted(spark, read, field, i, existing, where)
    }
  }

  /** Removes every segment of index `name` from the newest version; None when there is no such index. */
  def drop(name: String): Option[TableIndexes.Dropped] = {
    val read = dataset.snapshot(forWrite = true)
    val segments = indices(read).filter(_.getName == name)
    if (segments.isEmpty) None
    else {
      val committed = new Committer(dataset, settings.commitRetries)
        .commit(Some(read), Operation.CreateIndex(Nil, segments), record = Some(CommitRecord(Statement.DropIndex)))
      Some(TableIndexes.Dropped(name, segments.size, committed.version))
    }
  }

  /**
   * pylance's `optimize_indices` for the vector indices `names` (every one when empty): see
   * [[VectorIndexOptimize]]. The rows to add are encoded by Spark tasks with each index's own
   * model (or, with `retrain`, a model trained again); every index changed is committed in one
   * CreateIndex, nothing when none changes.
   */
  def optimize(spark: SparkSession, names: Seq[String], numIndicesToMerge: Option[Int], retrain: Boolean,
      where: String): TableIndexes.Optimized = {
    val read = dataset.snapshot(forWrite = true)
    val scalars = indices(read).filter(i => ScalarIndexType.of(i).isDefined)
    val scalarNames = scalars.map(_.getName).distinct
    val inverted = indices(read).filter(InvertedIndexJob.isInverted)
    val invertedNames = inverted.map(_.getName).distinct
    val vectorNames = names.filterNot(n => scalarNames.contains(n) || invertedNames.contains(n))
    // Names of scalar indices only: no vector index is optimized; no names: every index is.
    val steps = if (names.nonEmpty && vectorNames.isEmpty) Nil
      else VectorIndexOptimize.plan(dataset.storage, read, vectorNames, numIndicesToMerge, retrain, where)
    val build = new ScalarIndexBuild(quotedName, dataset, settings.storageConf)
    val scalarSteps = scalarNames.filter(n => names.isEmpty || names.contains(n)).flatMap { n =>
      build.optimize(spark, read, scalars.filter(_.getName == n), numIndicesToMerge.getOrElse(0), retrain, where)
    } ++ invertedNames.filter(n => names.isEmpty || names.contains(n)).flatMap { n =>
      InvertedIndexJob.optimize(spark, quotedName, dataset, read, settings.storageConf, inverted.filter(_.getName == n),
        numIndicesToMerge, named = names.contains(n), where)
    }
    if (steps.isEmpty && scalarSteps.isEmpty) TableIndexes.Optimized(Nil, 0, 0, 0, read.version)
    else {
      val added = steps.flatMap { s =>
        val model = s.model.getOrElse(VectorIndexJob.train(spark, quotedName, read, settings.storageConf, s.field, s.retrain.get, s.name)._1)
        VectorIndexJob.encode(spark, quotedName, read, settings.storageConf, s.field, model, s.name, s.fragments, s.datasetVersion,
          s.oneSegment)
      } ++ scalarSteps.flatMap(_.added)
      val removed = steps.flatMap(_.removed) ++ scalarSteps.flatMap(_.removed)
      val committed = ZoneMapSegment.commit(dataset, read, added, removed, settings.commitRetries, CommitRecord(Statement.OptimizeIndex))
      TableIndexes.Optimized(steps.map(_.name) ++ scalarSteps.map(_.name),
        steps.map(_.uncovered.size.toLong).sum + scalarSteps.map(_.uncovered).sum, added.size, removed.size, committed.version)
    }
  }

  /** The user-visible indices of `snapshot` (system indices such as fragment reuse left out), by name. */
  def list(snapshot: Snapshot): Seq[TableIndexes.Listed] = {
    val byId = snapshot.schema.allFields.map(f => f.id -> f.name).toMap
    indices(snapshot).filter(i => Indices.kind(i) match {
      case IndexKind.FragmentReuse | IndexKind.System => false
      case _ => true
    }).groupBy(_.getName).toSeq.sortBy(_._1).map { case (name, segments) =>
      val first = segments.head
      TableIndexes.Listed(name, typeName(first), first.getFieldsList.asScala.toSeq.flatMap(id => byId.get(id.intValue)), segments.size)
    }
  }

  /** The index's type as pylance lists it: IVF_PQ, ZONEMAP, BTREE, ... */
  private def typeName(index: IndexMetadata): String =
    if (VectorIndexSegment.isVector(index)) VectorIndexSegment.detailsTypeName(index)
    else ScalarIndexType.of(index).map(_.name).getOrElse(Indices.typeName(index).toUpperCase(java.util.Locale.ROOT))

  /** Every index of `read`, by name. */
  def names(read: Snapshot): Seq[String] = indices(read).map(_.getName).distinct.sorted

  private def indices(read: Snapshot): Seq[IndexMetadata] = Indices.parse(read.file.indexSection, s"$quotedName version ${read.version}")

  private def vector(spark: SparkSession, read: Snapshot, field: LanceField, request: IndexRequest.Vector,
      existing: Seq[IndexMetadata], where: String): TableIndexes.Built = {
    val replaced = VectorIndexBuild.replaced(existing, request.name, field, where)
    val built = try VectorIndexJob.build(spark, quotedName, read, settings.storageConf, field, request.options, request.name)
      catch { case e: IllegalArgumentException => throw new IllegalArgumentException(s"$where: ${e.getMessage}", e) }
    val committed = ZoneMapSegment.commit(dataset, read, built.segments, replaced, settings.commitRetries,
      CommitRecord(Statement.CreateIndex))
    TableIndexes.Built(request.name, built.segments.headOption.fold(request.options.indexType.name)(typeName), read.fragments.size, zones = None, built.segments.size,
      committed.version)
  }

  private def zoneMap(spark: SparkSession, read: Snapshot, field: LanceField, request: IndexRequest.ZoneMap,
      existing: Seq[IndexMetadata], where: String): TableIndexes.Built = {
    if (!ZoneValues.supports(field)) throw new UnsupportedOperationException(
      s"$where: column '${field.name}' of type ${field.arrowType} cannot have a zone map; " +
        "integers, dates, timestamps (microseconds), floating point, strings, binary, booleans and decimals can")
    val replaced = existing.filter(_.getName == request.name)
    replaced.find(i => !ZoneMapSegment.isZoneMap(i) || i.getFieldsList.asScala.map(_.intValue) != Seq(field.id)).foreach { other =>
      throw new IllegalArgumentException(s"$where: index ${Indices.describe(other)} " +
        s"already exists and is not a zone map of '${field.name}'; drop it first (drop_index) or choose another name")
    }
    val zones = ZoneMapJob.zones(spark, quotedName, read.files, settings.storageConf, read.fragments, field, request.rowsPerZone)
    val entry = Using.resource(Allocators.child(s"zone map ${request.name} of $quotedName")) { allocator =>
      ZoneMapSegment.create(dataset.storage, dataset.path, request.name, field.id, field.arrowType, zones,
        read.fragments.map(_.getId), read.version, request.rowsPerZone, allocator)
    }
    val committed = ZoneMapSegment.commit(dataset, read, Seq(entry), replaced, settings.commitRetries,
      CommitRecord(Statement.CreateIndex))
    TableIndexes.Built(request.name, typeName(entry), read.fragments.size, Some(zones.size), segments = 1, committed.version)
  }

  /**
   * A BTREE, BITMAP or LABEL_LIST over every live row of `read`, in pylance's format
   * (docs/format-scalar-indices.md), replacing an index of the same name, kind and column.
   */
  private def scalar(spark: SparkSession, read: Snapshot, field: LanceField, request: IndexRequest.Scalar,
      existing: Seq[IndexMetadata], where: String): TableIndexes.Built = {
    val kind = request.indexType
    val build = new ScalarIndexBuild(quotedName, dataset, settings.storageConf)
    build.valueField(kind, field, read, where)
    val replaced = existing.filter(_.getName == request.name)
    replaced.find(i => !ScalarIndexType.of(i).contains(kind) || i.getFieldsList.asScala.map(_.intValue) != Seq(field.id)).foreach { other =>
      throw new IllegalArgumentException(s"$where: index ${Indices.describe(other)} " +
        s"already exists and is not a ${kind.name} index of '${field.name}'; drop it first (drop_index) or choose another name")
    }
    val entry = build.segment(spark, read, field, kind, request.name, request.zoneSize, read.fragments, where)
    val committed = ZoneMapSegment.commit(dataset, read, Seq(entry), replaced, settings.commitRetries, CommitRecord(Statement.CreateIndex))
    TableIndexes.Built(request.name, typeName(entry), read.fragments.size, zones = None, segments = 1, committed.version)
  }

  /**
   * An INVERTED index over every live row of `read` in pylance's format
   * (docs/format-inverted-index.md), replacing an INVERTED index of the same name and column.
   */
  private def inverted(spark: SparkSession, read: Snapshot, field: LanceField, request: IndexRequest.Inverted,
      existing: Seq[IndexMetadata], where: String): TableIndexes.Built = {
    field.arrowType match {
      case _: org.apache.arrow.vector.types.pojo.ArrowType.Utf8 | _: org.apache.arrow.vector.types.pojo.ArrowType.LargeUtf8 =>
      case other => throw new UnsupportedOperationException(
        s"$where: column '${field.name}' of type $other cannot have an INVERTED index; string columns can")
    }
    val replaced = existing.filter(_.getName == request.name)
    replaced.find(i => !InvertedIndexJob.isInverted(i) || i.getFieldsList.asScala.map(_.intValue) != Seq(field.id)).foreach { other =>
      throw new IllegalArgumentException(s"$where: index ${Indices.describe(other)} " +
        s"already exists and is not an INVERTED index of '${field.name}'; drop it first (drop_index) or choose another name")
    }
    val entry = InvertedIndexJob.segment(spark, quotedName, dataset, read, settings.storageConf, field, request.params, request.name,
      read.fragments, request.numWorkers)
    val committed = ZoneMapSegment.commit(dataset, read, Seq(entry), replaced, settings.commitRetries, CommitRecord(Statement.CreateIndex))
    TableIndexes.Built(request.name, typeName(entry), read.fragments.size, zones = None, segments = 1, committed.version)
  }
}

object TableIndexes {
  /**
   * What a build committed: the index and its type as pylance lists it, the fragments it covers,
   * its zones (zone maps only), the index segments it wrote, the version.
   */
  final case class Built(name: String, indexType: String, fragments: Long, zones: Option[Long], segments: Long, version: Long)
  final case class Dropped(name: String, segments: Long, version: Long)
  /** `indices` changed (none: nothing committed, `version` the current one); `fragments` = those newly covered. */
  final case class Optimized(indices: Seq[String], fragments: Long, added: Long, removed: Long, version: Long)
  /** An index as listed: its name, Lance's type name (e.g. IVF_PQ... as its details name it), its columns and segments. */
  final case class Listed(name: String, typeName: String, columns: Seq[String], segments: Int)
}
