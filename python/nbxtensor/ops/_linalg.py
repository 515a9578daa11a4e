"""Matrix products, gathers and model ops (typed wrappers over ``call``)."""

__all__ = []
