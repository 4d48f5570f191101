"""xlplan: LLM-inference capacity planning, from a forecast and a promise to a purchase order."""

__version__ = "0.1.0"
