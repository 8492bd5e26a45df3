"""Cross-app scenario templates (filled below)."""

from __future__ import annotations

__all__: list[str] = []
