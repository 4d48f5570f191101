"""Unit constants, kept in one place.

Binary and decimal units are never mixed inline: every conversion in xlplan
goes through these names.

- ``GIB`` = 2**30 bytes (what CUDA, vLLM and nvidia-smi's MiB figures use).
- ``GB`` = 10**9 bytes (what GPU marketing and model-weight "GB" use).

An "80 GB" H100 is 80e9 bytes marketed but reports 81,559 MiB = 79.65 GiB to the
driver; confusing GiB and GB is a 7% error.
"""

GIB = 2**30
"""Bytes in one gibibyte. [bytes/GiB]"""

MIB = 2**20
"""Bytes in one mebibyte. [bytes/MiB]"""

GB = 10**9
"""Bytes in one (decimal) gigabyte. [bytes/GB]"""

TERA = 1e12
"""FLOP in one TFLOP; bytes in one TB. [1]"""

MILLION = 1e6
"""Tokens in one million tokens (the unit of API prices). [tokens/Mtok]"""

SECONDS_PER_HOUR = 3600.0
"""[s/h]"""

HOURS_PER_MONTH = 730.0
"""Billing hours in an average month (8,760 h / 12), the runbook's convention. [h/month]"""
