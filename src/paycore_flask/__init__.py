"""Flask extension mounting paycore routes (see the HTTP issue)."""
