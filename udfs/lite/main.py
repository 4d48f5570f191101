"""xlplan's Excel functions in xlwings Lite (Python in Excel through Pyodide; free for commercial use).

Paste this file into xlwings Lite's main.py editor and udfs/lite/requirements.txt into its
requirements.txt tab (with the URL of your xlplan wheel), then restart the add-in: the
functions appear as =LITTLES_LAW(), =MEMORY_GPUS(), =BINDING_CONSTRAINT() ... with their help
text in Excel's function wizard. They are the same functions classic xlwings and xlwings
Server register: one module, udfs/functions.py.
"""

from udfs.functions import *
