"""Small helpers shared by every room of the package."""
