"""replica package."""
