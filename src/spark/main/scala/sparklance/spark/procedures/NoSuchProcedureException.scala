package sparklance.spark.procedures

import sparklance.spark.errors.{LanceAnalysisException, LanceErrorCondition}

/** A `CALL` of a procedure the catalog does not have; names the ones it has (LANCE_PROCEDURE_NOT_FOUND). */
class NoSuchProcedureException(catalog: String, name: String, known: Seq[String])
  extends LanceAnalysisException(LanceErrorCondition.ProcedureNotFound, Map(
    "catalog" -> catalog, "procedure" -> name, "known" -> known.map(p => s"$catalog.${LanceProcedures.Namespace}.$p").mkString(", ")), null)
