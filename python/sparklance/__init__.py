"""sparklance: Spark SQL on Lance tables, including DELETE, UPDATE and MERGE INTO.

The catalog itself is a JVM plugin; this package ships its jar and configures a SparkSession.
"""
from pathlib import Path

__all__ = ["configure", "jar_path", "CATALOG_CLASS"]

CATALOG_CLASS = "sparklance.spark.LanceCatalog"


def jar_path() -> str:
    """Path of the sparklance jar bundled in this package."""
    jar = Path(__file__).parent / "jars" / "sparklance.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"{jar} is missing: build it with the README's set-up command (it runs the sbt assembly)")
    return str(jar)


def configure(builder, warehouse, name="lance"):
    """Return `builder` with the sparklance jar on the classpath and catalog `name` over `warehouse`.

    Tables of the catalog live at ``<warehouse>/<namespace>/<table>.lance``, where pylance's
    ``lance.dataset(path)`` opens them too.
    """
    warehouse = str(Path(warehouse).expanduser().resolve())
    return (builder
            .config("spark.jars", jar_path())
            .config(f"spark.sql.catalog.{name}", CATALOG_CLASS)
            .config(f"spark.sql.catalog.{name}.warehouse", warehouse))
