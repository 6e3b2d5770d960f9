package sparklance.format

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import java.nio.file.{Files, Path, Paths}
import org.scalatest.Assertions

/**
 * pylance, the format oracle, from the project's virtual environment (.venv, which ./dev/setup
 * creates; SPARKLANCE_PYTHON overrides). A test without it is canceled when run by hand and
 * fails in CI (where `CI` is set), so a broken set-up cannot pass as green.
 */
object Pylance extends Assertions {
  private val python: Option[Path] =
    (sys.env.get("SPARKLANCE_PYTHON").toSeq :+ Paths.get(sys.props("user.dir"), ".venv/bin/python").toString)
      .map(Paths.get(_)).find(Files.isExecutable(_))

  /** The virtual environment's Python, or the test ends (canceled, or failed in CI). */
  def pythonOrCancel(): Path = {
    val missing = "No Python virtual environment with pylance (.venv/bin/python); run ./dev/setup"
    python.getOrElse(if (sys.env.contains("CI")) fail(missing) else cancel(missing))
  }

  /** Runs `script` (a file) with `args`; returns its output, failing the test if it exits non-zero. */
  def run(script: Path, args: String*): String = {
    val p = new ProcessBuilder((pythonOrCancel().toString +: script.toString +: args): _*).redirectErrorStream(true).start()
    val output = new String(p.getInputStream.readAllBytes(), "UTF-8")
    val rc = p.waitFor()
    assert(rc == 0, s"pylance script $script failed (exit $rc):\n$output")
    output
  }

  private val json = new ObjectMapper()

  /** The last line of a script's output, read as JSON: how the oracle scripts report. */
  def lastJson(output: String): JsonNode = json.readTree(output.trim.linesIterator.toSeq.last)

  /** The integers of the array `key` of `report`, the first found at any depth. */
  def ints(report: JsonNode, key: String): Seq[Int] = {
    val node = report.findValue(key)
    assert(node != null && node.isArray, s"$key is no array in $report")
    (0 until node.size).map(node.get(_).asInt)
  }
}
