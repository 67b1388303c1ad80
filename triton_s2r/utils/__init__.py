"""Helpers that every wing may use: atomic file writing, the cache folder and optional-import guards."""
