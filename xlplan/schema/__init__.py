"""The plan's input and result types: the plan file's sections and its version, the plausible range of every input,
and the typed results every part returns. Every part may import them; they import only the catalog and the serving
model's names (an engine, a dtype).
"""
