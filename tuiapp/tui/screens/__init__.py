"""The dashboard screen and the modal/detail screens opened from it."""
