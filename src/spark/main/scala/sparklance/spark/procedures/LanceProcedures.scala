package sparklance.spark.procedures

import sparklance.spark.LanceCatalog

/** The procedures of a sparklance catalog, all in its `system` namespace. */
object LanceProcedures {
  val Namespace = "system"

  private val builders: Map[String, LanceCatalog => LanceProcedure] = Map(
    CompactProcedure.Name -> (new CompactProcedure(_)),
    AddColumnsProcedure.Name -> (new AddColumnsProcedure(_)),
    UpdateColumnsProcedure.Name -> (new UpdateColumnsProcedure(_)),
    VacuumProcedure.Name -> (new VacuumProcedure(_)),
    RestoreProcedure.Name -> (new RestoreProcedure(_)),
    CreateTagProcedure.Name -> (new CreateTagProcedure(_)),
    CreateIndexProcedure.Name -> (new CreateIndexProcedure(_)),
    DropIndexProcedure.Name -> (new DropIndexProcedure(_)),
    OptimizeIndexProcedure.Name -> (new OptimizeIndexProcedure(_)),
    DeleteTagProcedure.Name -> (new DeleteTagProcedure(_)),
    CreateBranchProcedure.Name -> (new CreateBranchProcedure(_)),
    DeleteBranchProcedure.Name -> (new DeleteBranchProcedure(_)),
    UndropTableProcedure.Name -> (new UndropTableProcedure(_)),
    PurgeDroppedTableProcedure.Name -> (new PurgeDroppedTableProcedure(_)),
    EmptyTrashProcedure.Name -> (new EmptyTrashProcedure(_)),
    SetNotNullProcedure.Name -> (new SetNotNullProcedure(_)))

  def names: Seq[String] = builders.keys.toSeq.sorted

  def load(catalog: LanceCatalog, namespace: Seq[String], name: String): LanceProcedure =
    builders.get(name.toLowerCase(java.util.Locale.ROOT)).filter(_ => namespace.map(_.toLowerCase) == Seq(Namespace))
      .map(_(catalog)).getOrElse(throw new NoSuchProcedureException(catalog.name(), (namespace :+ name).mkString("."), names))
}
