"""sparklance.configure: the warehouse and spark.jars it sets on a SparkSession builder."""
import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparklance

WAREHOUSE = "spark.sql.catalog.lance.warehouse"


def _options(builder):
    return builder._options


@pytest.mark.parametrize("uri", ["hdfs://nn:8020/wh", "s3a://bucket/wh", "abfss://c@acct.dfs.core.windows.net/wh",
                                 "file:///tmp/wh", "file:/tmp/wh", "viewfs://cluster/wh"])
def test_uris_are_kept_as_given(uri):
    assert _options(sparklance.configure(SparkSession.builder, uri))[WAREHOUSE] == uri


def test_local_paths_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _options(sparklance.configure(SparkSession.builder, "wh"))[WAREHOUSE] == str(tmp_path.resolve() / "wh")
    assert _options(sparklance.configure(SparkSession.builder, tmp_path / "x"))[WAREHOUSE] == str(tmp_path.resolve() / "x")
    home = _options(sparklance.configure(SparkSession.builder, "~/wh"))[WAREHOUSE]
    assert home == str(Path(os.path.expanduser("~/wh")).resolve())
    # One letter before the colon is a Windows drive, not a URI scheme.
    assert _options(sparklance.configure(SparkSession.builder, "C:wh"))[WAREHOUSE] == str(tmp_path.resolve() / "C:wh")


def test_the_jar_is_added_to_the_jars_already_set():
    jar = sparklance.jar_path()
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar, /opt/b.jar")
    sparklance.configure(builder, "hdfs://nn:8020/wh")
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{jar}"
    sparklance.configure(builder, "hdfs://nn:8020/wh", name="other")
    assert _options(builder)["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{jar}"
    assert _options(sparklance.configure(SparkSession.builder, "/tmp/wh"))["spark.jars"] == jar
