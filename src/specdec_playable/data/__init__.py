"""Readers of the measurements and texts shipped in ``assets/``: one reader per file.

Nothing is read on import; each reader reads its file on first call and returns frozen,
read-only values that every session may share.
"""
