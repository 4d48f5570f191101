"""Everything that reads or writes: plan files, model configs, notes. Outside names map to ours here."""
