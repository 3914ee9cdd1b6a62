"""Litestar plugin mounting paycore routes (see the HTTP issue)."""
