"""Admin HTTP API (Quart-Trio), served inside the broker process."""
