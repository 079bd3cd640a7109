"""The Spark names :mod:`.asr` uses, imported on first use (so that importing :mod:`.asr`, which
update exchange does after every epoch, costs nothing when no ASR exists)."""

from functools import reduce  # noqa: F401

from pyspark.sql import DataFrame  # noqa: F401
from pyspark.sql import functions as F  # noqa: F401

from selp.cdss.proql.spark_graph import load_epoch_graph, relation_of  # noqa: F401
