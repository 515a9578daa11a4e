"""nbxtensor.io: reading weights: safetensors files and the conversions made at load."""

from . import safetensors

__all__ = ["safetensors"]
