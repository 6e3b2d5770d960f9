package sparklance.spark

import sparklance.format.LanceException

/** A namespace or table name the catalog cannot take (empty, a path, no namespace where one is needed). */
class InvalidNameException(val name: String, message: String) extends LanceException(message)
