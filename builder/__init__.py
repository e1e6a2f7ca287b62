"""builder: declarative build recipes for native GPU and ML libraries."""

__version__ = "0.1.0"
